package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id    string
	hasID bool
	event string
	data  []byte
	retry time.Duration // 0: none given
}

// sseReader reads events from a text/event-stream body (the WHATWG
// event-stream format): lines of "field: value" ended by \n, \r\n or \r, an
// event ended by a blank line, data lines joined by \n, comments (":")
// ignored. An event larger than max bytes is an error.
type sseReader struct {
	br    *bufio.Reader
	max   int
	lines [][]byte // lines already read, split on lone \r
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 32<<10), max: max}
}

// next returns the next event; io.EOF at the end of the stream (an event
// not ended by a blank line is dropped, as the format says).
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	size := 0
	for {
		line, err := s.readLine(&size)
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			// An empty data buffer dispatches nothing (WHATWG), but an
			// id or a retry on its own is kept: the priming event.
			if data.Len() > 0 || ev.hasID || ev.retry > 0 {
				ev.data = data.Bytes()
				return ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.Write(value)
			hasData = true
		case "id":
			if !bytes.Contains(value, []byte{0}) {
				ev.id, ev.hasID = string(value), true
			}
		case "event":
			ev.event = string(value)
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				ev.retry = time.Duration(ms) * time.Millisecond
				if ev.retry == 0 {
					ev.retry = time.Millisecond
				}
			}
		}
	}
}

var errEventTooLarge = errors.New("SSE event over the size limit")

// readLine returns the next line without its terminator: \r\n, \n or a
// lone \r, as the format allows.
func (s *sseReader) readLine(size *int) ([]byte, error) {
	if len(s.lines) > 0 {
		line := s.lines[0]
		s.lines = s.lines[1:]
		return line, nil
	}
	var chunk []byte
	for {
		part, err := s.br.ReadSlice('\n')
		*size += len(part)
		if *size > s.max+64 {
			return nil, errEventTooLarge
		}
		chunk = append(chunk, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if err == io.EOF && len(chunk) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		break
	}
	chunk = bytes.TrimSuffix(chunk[:len(chunk)-1], []byte("\r"))
	lines := bytes.Split(chunk, []byte("\r"))
	s.lines = lines[1:]
	return lines[0], nil
}
