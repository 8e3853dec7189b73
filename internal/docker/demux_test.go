package docker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func frame(stream byte, payload string) []byte {
	h := make([]byte, 8, 8+len(payload))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(payload)))
	return append(h, payload...)
}

func TestDemux(t *testing.T) {
	big := strings.Repeat("x", 70000) // larger than any copy buffer
	tests := []struct {
		name               string
		in                 []byte
		wantOut, wantErr   string
		wantFailure        string
		wantUnexpectedEOFs bool
	}{
		{name: "empty stream"},
		{
			name:    "interleaved",
			in:      bytes.Join([][]byte{frame(1, "out1\n"), frame(2, "err1\n"), frame(1, "out2\n"), frame(2, "")}, nil),
			wantOut: "out1\nout2\n", wantErr: "err1\n",
		},
		{name: "stdin frame goes to stdout", in: frame(0, "typed\n"), wantOut: "typed\n"},
		{name: "big frame", in: frame(2, big), wantErr: big},
		{name: "system error frame", in: append(frame(1, "ok\n"), frame(3, "exec failed")...), wantOut: "ok\n", wantFailure: "engine error in log stream: exec failed"},
		{name: "unknown stream", in: frame(7, "?"), wantFailure: "unknown stream 7"},
		{name: "truncated header", in: frame(1, "abc")[:5], wantFailure: "header", wantUnexpectedEOFs: true},
		{name: "truncated payload", in: frame(1, "abcdef")[:11], wantOut: "abc", wantFailure: "got 3 of 6 bytes", wantUnexpectedEOFs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			err := Demux(bytes.NewReader(tt.in), &out, &errw)
			if out.String() != tt.wantOut || errw.String() != tt.wantErr {
				t.Errorf("Demux stdout, stderr = %.40q, %.40q; want %.40q, %.40q", out.String(), errw.String(), tt.wantOut, tt.wantErr)
			}
			switch {
			case tt.wantFailure == "" && err != nil:
				t.Errorf("Demux = %v; want nil", err)
			case tt.wantFailure != "" && (err == nil || !strings.Contains(err.Error(), tt.wantFailure)):
				t.Errorf("Demux = %v; want an error containing %q", err, tt.wantFailure)
			}
			if tt.wantUnexpectedEOFs && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("Demux = %v; want it to wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

// TestDemuxOneByteReads feeds the stream a byte at a time, as a slow
// connection would.
func TestDemuxOneByteReads(t *testing.T) {
	in := bytes.Join([][]byte{frame(1, "hello "), frame(2, "oops"), frame(1, "world")}, nil)
	var out, errw bytes.Buffer
	if err := Demux(iotest.OneByteReader(bytes.NewReader(in)), &out, &errw); err != nil {
		t.Fatal(err)
	}
	if out.String() != "hello world" || errw.String() != "oops" {
		t.Errorf("Demux = %q, %q; want %q, %q", out.String(), errw.String(), "hello world", "oops")
	}
}

// FuzzDemux: any byte stream is either split or refused, never a panic,
// and what is split never exceeds the input; frames built from the two
// payloads come back exactly.
func FuzzDemux(f *testing.F) {
	f.Add([]byte("out\n"), []byte("err\n"), []byte{1, 0, 0, 0, 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{}, []byte{}, []byte{3, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, out, errb, raw []byte) {
		var o, e bytes.Buffer
		if err := Demux(bytes.NewReader(raw), &o, &e); err == nil && o.Len()+e.Len() > len(raw) {
			t.Fatalf("Demux wrote %d bytes from a %d-byte stream", o.Len()+e.Len(), len(raw))
		}
		o.Reset()
		e.Reset()
		in := append(frame(1, string(out)), frame(2, string(errb))...)
		if err := Demux(bytes.NewReader(in), &o, &e); err != nil || !bytes.Equal(o.Bytes(), out) || !bytes.Equal(e.Bytes(), errb) {
			t.Fatalf("Demux(frames of %q, %q) = %q, %q, %v", out, errb, o.Bytes(), e.Bytes(), err)
		}
	})
}
