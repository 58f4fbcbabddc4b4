package wirebody

import (
	"io"
	"net/http"
	"testing"

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
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", b.Reader())
	b.Prepare(r)
	first, _ := io.ReadAll(r.Body)
	again, _ := r.GetBody()
	second, _ := io.ReadAll(again)
	if r.ContentLength != int64(b.Len()) || string(first) != string(second) || string(first) != `{"a":[1,2]}` {
		t.Errorf("length %d, bodies %q and %q", r.ContentLength, first, second)
	}
}
