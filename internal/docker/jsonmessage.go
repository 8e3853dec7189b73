package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSONMessage is one line of the engine's JSON progress stream, as sent by
// POST /build and POST /images/create: build output in Stream, import and
// pull progress in Status/ID/Progress, results in Aux, and a failure in
// ErrorDetail/Error (which ends the stream).
type JSONMessage struct {
	Stream      string          `json:"stream,omitempty"`   // build output, e.g. "Step 2/3 : RUN make"
	Status      string          `json:"status,omitempty"`   // import: the new image ID; pull: "Downloading"
	ID          string          `json:"id,omitempty"`       // layer or image the status is about
	Progress    string          `json:"progress,omitempty"` // a rendered progress bar
	Aux         json.RawMessage `json:"aux,omitempty"`      // build: {"ID":"sha256:..."}
	ErrorDetail *ErrorDetail    `json:"errorDetail,omitempty"`
	Error       string          `json:"error,omitempty"` // same message as ErrorDetail.Message
}

// ErrorDetail is the structured form of a stream error.
type ErrorDetail struct {
	Code    int    `json:"code,omitempty"`
	Message string `json:"message"`
}

// ProgressFunc receives each message of a progress stream as soon as the
// engine sends it, in the calling goroutine. It must not block for long: the
// engine waits while it runs.
type ProgressFunc func(JSONMessage)

// err returns the stream error m carries, or nil.
func (m *JSONMessage) err() *StreamError {
	switch {
	case m.ErrorDetail != nil && m.ErrorDetail.Message != "":
		return &StreamError{Code: m.ErrorDetail.Code, Message: m.ErrorDetail.Message}
	case m.Error != "":
		return &StreamError{Message: m.Error}
	}
	return nil
}

// readStream decodes r message by message until EOF, calling each for every
// message. It stops at the first error message and returns it as a
// *StreamError (after calling each with it).
func readStream(r io.Reader, each func(JSONMessage)) error {
	dec := json.NewDecoder(r)
	for {
		var m JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read progress stream: %w", err)
		}
		each(m)
		if se := m.err(); se != nil {
			return se
		}
	}
}
