//go:build unix

package benchfull_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/internal/cputime"
	"github.com/reinhq/rein/llm/llmtest"
)

// Each loop of a round runs in a process of its own, this test binary
// started again with childEnv set to its spec, so that what a loop costs
// is its own work and its own garbage collection: in one process, a
// loop's CPU time also takes in marking what the other loops keep (the
// in-memory store's sessions) while its own waits (a store's fsyncs)
// leave the processor to the collector.
const childEnv = "REIN_BENCHFULL_CHILD"

var profileDir = flag.String("benchfull.profile", "", "write a CPU profile of each loop's timed runs to this `directory`")

// dir holds the durable stores' files for the whole run of the binary.
// Nothing in it is removed before the end: on ext4 without a journal,
// creating a file scans past every inode deleted in the last minute, so
// deleting one benchmark's sessions would slow the next one's creation.
var dir string

func TestMain(m *testing.M) {
	if s := os.Getenv(childEnv); s != "" {
		os.Exit(runChild(s))
	}
	var err error
	if dir, err = os.MkdirTemp("", "benchfull"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// spec is what a child runs: Runs timed loops of N steps named Loop
// ("floor", or the agent over the store "agent" or "mem" (in memory),
// "jsonl" or "sqlite" in Dir), after one loop untimed.
type spec struct {
	Loop    string `json:"loop"`
	N       int    `json:"n"`
	Runs    int    `json:"runs"`
	Dir     string `json:"dir,omitempty"`
	Profile string `json:"profile,omitempty"`
}

// cost is what a child measured over its timed loops.
type cost struct {
	CPU    time.Duration `json:"cpu"` // the process's user and system time
	Wall   time.Duration `json:"wall"`
	Allocs uint64        `json:"allocs"`
	Bytes  uint64        `json:"bytes"`
}

// runChild runs the spec s in this process and writes its cost to
// standard output.
func runChild(s string) int {
	var sp spec
	c, err := func() (cost, error) {
		if err := json.Unmarshal([]byte(s), &sp); err != nil {
			return cost{}, err
		}
		return measure(sp)
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchfull child %s: %v\n", s, err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(c)
	return 0
}

// measure runs sp's loops and returns what the timed ones cost.
func measure(sp spec) (cost, error) {
	srv, err := llmtest.NewCannedServer(nil, model, script(sp.N)...)
	if err != nil {
		return cost{}, err
	}
	defer srv.Close()
	st, err := open(sp.Loop, sp.Dir)
	if err != nil {
		return cost{}, err
	}
	defer st.Close()
	loop := func() error { return runOn(srv, sp.N, st) }
	if err := loop(); err != nil { // untimed: connections, pools, the store's first session
		return cost{}, err
	}
	if sp.Loop == "floor" {
		// The floor sends bodies of the sizes the agent sent.
		lengths := srv.Lengths()
		body := bytes.Repeat([]byte("x"), slices.Max(lengths))
		client, url := srv.Client(), srv.URL+"/v1/messages"
		loop = func() error {
			for _, l := range lengths {
				if err := exchange(client, url, body[:l]); err != nil {
					return err
				}
			}
			return nil
		}
		if err := loop(); err != nil {
			return cost{}, err
		}
	}
	if sp.Profile != "" {
		f, err := os.Create(sp.Profile)
		if err != nil {
			return cost{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return cost{}, err
		}
		defer pprof.StopCPUProfile()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m0, b0 := ms.Mallocs, ms.TotalAlloc
	c0, w0 := cputime.Process(), time.Now()
	for range sp.Runs {
		if err := loop(); err != nil {
			return cost{}, err
		}
	}
	c := cost{CPU: cputime.Process() - c0, Wall: time.Since(w0)}
	runtime.ReadMemStats(&ms)
	c.Allocs, c.Bytes = ms.Mallocs-m0, ms.TotalAlloc-b0
	return c, nil
}

// child runs sp in a new process of this binary.
func child(sp spec) (cost, error) {
	s, err := json.Marshal(sp)
	if err != nil {
		return cost{}, err
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+string(s))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return cost{}, fmt.Errorf("%w: %s", err, stderr.Bytes())
	}
	var c cost
	if err := json.Unmarshal(out, &c); err != nil {
		return cost{}, fmt.Errorf("child's report %q: %w", out, err)
	}
	if c.CPU <= 0 || c.Wall <= 0 {
		return cost{}, errors.New("child measured nothing")
	}
	return c, nil
}

// runsPerChild is how many loops of n steps one child times: enough for
// a few hundred steps, so a child's measurement is not lost in noise.
func runsPerChild(n int) int { return max(1, 300/n) }

// rounds runs b.N rounds of the loops named, each of n steps, one child
// process a loop, one after another in each round, in reverse order
// every other round, so each sees the machine as the others do. Per
// step, over all rounds, it reports each loop's CPU time
// (name-cpu-µs/step), wall time (name-µs/step), allocations
// (name-allocs/step) and bytes allocated (name-B/step); and for each
// loop after the first, the median over the rounds of the ratio of its
// CPU time to the first's in the same round (name/first-cpu), and of its
// wall time (name/first-wall).
func rounds(b *testing.B, n int, loops ...string) {
	runs := runsPerChild(n)
	total := make([]cost, len(loops))
	round := make([]cost, len(loops))
	cpuX := make([][]float64, len(loops))
	wallX := make([][]float64, len(loops))
	for k := 0; b.Loop(); k++ {
		for j := range loops {
			i := j
			if k%2 == 1 {
				i = len(loops) - 1 - j
			}
			sp := spec{Loop: loops[i], N: n, Runs: runs, Dir: filepath.Join(dir, fmt.Sprintf("%s-%d-%d", b.Name(), k, i))}
			if err := os.MkdirAll(sp.Dir, 0o755); err != nil {
				b.Fatal(err)
			}
			if *profileDir != "" {
				sp.Profile = filepath.Join(*profileDir, fmt.Sprintf("%s-N%d-%d.prof", loops[i], n, k))
			}
			c, err := child(sp)
			if err != nil {
				b.Fatalf("%s loop: %v", loops[i], err)
			}
			round[i] = c
			total[i].CPU += c.CPU
			total[i].Wall += c.Wall
			total[i].Allocs += c.Allocs
			total[i].Bytes += c.Bytes
		}
		for i := 1; i < len(loops); i++ {
			cpuX[i] = append(cpuX[i], float64(round[i].CPU)/float64(round[0].CPU))
			wallX[i] = append(wallX[i], float64(round[i].Wall)/float64(round[0].Wall))
		}
	}
	steps := float64(b.N * runs * n)
	for i, l := range loops {
		b.ReportMetric(float64(total[i].CPU.Microseconds())/steps, l+"-cpu-µs/step")
		b.ReportMetric(float64(total[i].Wall.Microseconds())/steps, l+"-µs/step")
		b.ReportMetric(float64(total[i].Allocs)/steps, l+"-allocs/step")
		b.ReportMetric(float64(total[i].Bytes)/steps, l+"-B/step")
		if i > 0 {
			b.ReportMetric(median(cpuX[i]), l+"/"+loops[0]+"-cpu")
			b.ReportMetric(median(wallX[i]), l+"/"+loops[0]+"-wall")
		}
	}
	b.ReportMetric(0, "ns/op")
}

// median returns the median of xs, which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 0 {
		return (xs[m-1] + xs[m]) / 2
	}
	return xs[m]
}

// A child runs its loops and reports what they cost: the floor, which
// first learns the agent's body sizes, and the agent over a durable
// store.
func TestChildMeasures(t *testing.T) {
	for _, loop := range []string{"floor", "sqlite"} {
		c, err := child(spec{Loop: loop, N: 3, Runs: 2, Dir: t.TempDir()})
		if err != nil {
			t.Fatalf("%s: %v", loop, err)
		}
		if c.Allocs == 0 || c.Bytes == 0 {
			t.Errorf("%s: %+v, want allocations counted", loop, c)
		}
	}
}
