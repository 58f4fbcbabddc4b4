package main

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func TestScrubberForms(t *testing.T) {
	s := newScrubber()
	secret := "s3cr3t/value+with=chars"
	s.add(secret)
	s.add("short") // too short to be told from ordinary words
	for k := range 3 {
		prefix := strings.Repeat("x", k)
		enc := base64.StdEncoding.EncodeToString([]byte(prefix + secret + "tail"))
		got := string(s.scrub([]byte("Basic " + enc)))
		if strings.Contains(got, enc) || !strings.Contains(got, redacted) {
			t.Errorf("offset %d: base64 %q not scrubbed: %q", k, enc, got)
		}
	}
	in := `{"a":"s3cr3t%2Fvalue%2Bwith%3Dchars","b":"s3cr3t/value+with=chars","c":"short"}`
	want := `{"a":"[redacted]","b":"[redacted]","c":"short"}`
	if got := string(s.scrub([]byte(in))); got != want {
		t.Errorf("scrub = %s, want %s", got, want)
	}
}

func TestScrubWriterSplitSecret(t *testing.T) {
	s := newScrubber()
	s.add("abcdefghijkl")
	var out bytes.Buffer
	w := s.writer(&out)
	for _, part := range []string{"streamed ", "text abcdef", "ghijkl and more", " abc"} {
		w.Write([]byte(part))
	}
	if got := out.String(); got != "streamed text [redacted] and more " {
		t.Errorf("before Flush: %q (text that cannot begin a secret must flow at once)", got)
	}
	w.Flush()
	if got, want := out.String(), "streamed text [redacted] and more abc"; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}
}
