package testkit

import (
	"bytes"
	"encoding/json"
)

// JSONNesting returns how deeply objects and arrays nest in a valid JSON
// document, the outermost counting as 1: a reference, independent of the
// readers' own limit checks, for the fuzz targets that test them.
func JSONNesting(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}
