package openai

import (
	"encoding/json"
	"errors"
	"io"
)

// eventJSON decodes the JSON payload of one SSE event at a time with a
// reused json.Decoder. json.Unmarshal builds its decoding state afresh on
// every call, which is most of the allocations of a stream of small
// events; a long-lived decoder keeps it.
type eventJSON struct {
	src feed
	dec *json.Decoder
	fed int64 // bytes handed to dec since it was made
}

// feed hands the current event's bytes to the decoder, then io.EOF.
type feed struct{ b []byte }

func (f *feed) Read(p []byte) (int, error) {
	if len(f.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.b)
	f.b = f.b[n:]
	return n, nil
}

var errTrailingData = errors.New("invalid character after top-level value")

// decode decodes data, one whole JSON value, into v. Like json.Unmarshal
// it reports a *json.UnmarshalTypeError after decoding what it could.
func (j *eventJSON) decode(data []byte, v any) error {
	if j.dec == nil {
		j.dec = json.NewDecoder(&j.src)
		j.fed = 0
	}
	j.src.b = data
	j.fed += int64(len(data))
	err := j.dec.Decode(v)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		j.reset()
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	if j.dec.InputOffset() != j.fed {
		// Bytes after the value (even spaces) would be read as part of
		// the next event; start afresh, and fail on anything but space.
		rest := j.fed - j.dec.InputOffset()
		j.reset()
		if rest > int64(len(data)) {
			return errTrailingData
		}
		for _, c := range data[len(data)-int(rest):] {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				return errTrailingData
			}
		}
	}
	return err
}

func (j *eventJSON) reset() {
	j.dec = nil
	j.src.b = nil
}
