package wirebody

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
)

func TestKeyFollowsParts(t *testing.T) {
	m := llm.UserText("hi")
	k := KeyOf(&m)
	same := m // a copy of the message shares its parts
	if !k.Is(&same) {
		t.Error("a copy sharing the parts is not the same message")
	}
	edited := llm.UserText("hi")
	if k.Is(&edited) {
		t.Error("a message with new parts is the same message")
	}
	shorter := llm.Message{Role: m.Role, Parts: m.Parts[:0]}
	if k.Is(&shorter) {
		t.Error("a message with fewer parts is the same message")
	}
	other := llm.Message{Role: llm.RoleAssistant, Parts: m.Parts}
	if k.Is(&other) || k.Role() != llm.RoleUser {
		t.Error("the role is not part of the key")
	}
}

func TestBodyReadsAsOneSlice(t *testing.T) {
	b := Body{Head: []byte(`{"a":[`), Shared: []byte(`1,2`), Tail: []byte(`]}`)}
	if got := string(b.Bytes()); got != `{"a":[1,2]}` || b.Len() != len(got) {
		t.Fatalf("Bytes = %s, Len = %d", got, b.Len())
	}
	if err := iotest.TestReader(b.Reader(), b.Bytes()); err != nil {
		t.Error(err)
	}
}

// A Read fills the whole buffer across the seams between the pieces, as a
// reader of one slice does, so a copy makes no short writes.
func TestReaderFillsAcrossSeams(t *testing.T) {
	b := Body{Head: []byte("ab"), Shared: []byte("cdefg"), Tail: []byte("hi")}
	r := b.Reader()
	var got []int
	for {
		p := make([]byte, 4)
		n, err := r.Read(p)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if diff := cmp.Diff([]int{4, 4, 1}, got); diff != "" {
		t.Errorf("read sizes (-want +got):\n%s", diff)
	}
}

// Sized gives a request carrying a Body's reader its length, so it is not
// sent chunked, and a way to read it again; other bodies pass untouched.
func TestSizedGivesTheLength(t *testing.T) {
	type seen struct {
		length  int64
		chunked bool
		body    string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.ContentLength, len(r.TransferEncoding) > 0, string(body)}
	}))
	defer srv.Close()
	b := Body{Head: []byte(`{"a":[`), Shared: []byte(`1,2`), Tail: []byte(`]}`)}
	req, err := http.NewRequest(http.MethodPost, srv.URL, b.Reader())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Sized(req, srv.Client().Do)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff(seen{int64(b.Len()), false, `{"a":[1,2]}`}, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("the server saw (-want +got):\n%s", diff)
	}
	again, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(again); string(body) != `{"a":[1,2]}` {
		t.Errorf("GetBody reads %q", body)
	}

	other, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("x")))
	other.ContentLength = 0
	Sized(other, func(r *http.Request) (*http.Response, error) {
		if r.ContentLength != 0 || r.GetBody != nil {
			t.Error("a body of another kind was given a length")
		}
		return nil, nil
	})
}
