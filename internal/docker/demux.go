package docker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Stream numbers in the multiplexed framing.
const (
	streamStdin  = 0 // written to stdout, as the engine's own client does
	streamStdout = 1
	streamStderr = 2
	streamSystem = 3 // an engine error (API 1.41+ on attach and exec)
)

// Demux splits a multiplexed stream (logs, attach or exec of a container
// without a TTY) into stdout and stderr. Each frame is an 8-byte header
// [stream, 0, 0, 0, size as uint32 big endian] followed by size bytes of
// output. It returns nil at a clean end of stream, an error ending with
// io.ErrUnexpectedEOF when the stream stops inside a frame, and the engine's
// message when it sends a system-error frame.
func Demux(r io.Reader, stdout, stderr io.Writer) error {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read log frame header: %w", err)
		}
		size := int64(binary.BigEndian.Uint32(hdr[4:]))
		var w io.Writer
		switch hdr[0] {
		case streamStdin, streamStdout:
			w = stdout
		case streamStderr:
			w = stderr
		case streamSystem:
			msg, err := io.ReadAll(io.LimitReader(r, min(size, maxErrorBody)))
			if err != nil {
				return fmt.Errorf("read log system-error frame: %w", err)
			}
			return fmt.Errorf("docker: engine error in log stream: %s", msg)
		default:
			return fmt.Errorf("read log frame: unknown stream %d (is the container a TTY?)", hdr[0])
		}
		n, err := io.CopyN(w, r, size)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("read log frame: got %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("copy log frame: %w", err)
		}
	}
}
