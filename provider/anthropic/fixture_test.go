package anthropic

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// exchange is one recorded HTTP request and response.
type exchange struct {
	RequestBody string
	Status      int
	Header      http.Header
	Body        []byte
}

// loadCassette reads a go-vcr v2 cassette.
func loadCassette(t testing.TB, path string) []exchange {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Interactions []struct {
			Request struct {
				Body string `yaml:"body"`
			} `yaml:"request"`
			Response struct {
				Body    string              `yaml:"body"`
				Headers map[string][]string `yaml:"headers"`
				Code    int                 `yaml:"code"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []exchange
	for _, in := range c.Interactions {
		h := http.Header{}
		for k, vs := range in.Response.Headers {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
		out = append(out, exchange{
			RequestBody: in.Request.Body,
			Status:      in.Response.Code,
			Header:      h,
			Body:        []byte(in.Response.Body),
		})
	}
	return out
}

// loadHTTPRR reads an "httprr trace v1" file.
func loadHTTPRR(t testing.TB, path string) []exchange {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const header = "httprr trace v1\n"
	if !bytes.HasPrefix(raw, []byte(header)) {
		t.Fatalf("%s: not an httprr trace", path)
	}
	rest := raw[len(header):]
	var out []exchange
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			t.Fatalf("%s: truncated record header", path)
		}
		f := strings.Fields(string(rest[:nl]))
		if len(f) != 2 {
			t.Fatalf("%s: bad record header %q", path, rest[:nl])
		}
		reqLen, err1 := strconv.Atoi(f[0])
		respLen, err2 := strconv.Atoi(f[1])
		rest = rest[nl+1:]
		if err1 != nil || err2 != nil || reqLen+respLen > len(rest) {
			t.Fatalf("%s: bad record lengths %q", path, f)
		}
		reqRaw, respRaw := rest[:reqLen], rest[reqLen:reqLen+respLen]
		rest = rest[reqLen+respLen:]

		var reqBody string
		if i := bytes.Index(reqRaw, []byte("\r\n\r\n")); i >= 0 {
			reqBody = string(reqRaw[i+4:])
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(respRaw)), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		resp.Header.Del("Content-Length")
		out = append(out, exchange{RequestBody: reqBody, Status: resp.StatusCode, Header: resp.Header, Body: body})
	}
	return out
}

// fixtures lists the recorded exchanges by file.
var fixtures = []struct {
	name string
	file string
	load func(testing.TB, string) []exchange
}{
	{"cache_control_tool", "fantasy__anthropic_cache_control_tool_streaming.yaml", loadCassette},
	{"thinking_tool", "fantasy__anthropic_thinking_tool_streaming.yaml", loadCassette},
	{"tool_results_caching", "langchaingo__anthropic_tool_results_caching_streaming.httprr", loadHTTPRR},
}

func fixtureName(name string, i int) string { return fmt.Sprintf("%s_%d", name, i) }
