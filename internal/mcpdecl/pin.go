package mcpdecl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// PinsFile is where an agent image records the tool lists its build saw.
const PinsFile = "/choir/mcp-pins.json"

// Pins are the tool lists the build saw: server -> MCP tool name -> the
// tool's definition as the server sent it and its ToolHash.
type Pins map[string]map[string]Pinned

// Pinned is one tool as the build saw it.
type Pinned struct {
	Hash string          `json:"hash"`
	Def  json.RawMessage `json:"def"`
}

// ToolHash is the hex SHA-256 of a tool's definition as the server sent it
// (name, description, schemas, annotations: every member), in canonical
// form (members sorted, no spaces), so formatting does not count.
func ToolHash(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if c, err := json.Marshal(v); err == nil {
			raw = c
		}
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// ReadPins reads a pins file; a missing file is nil pins and no error.
func ReadPins(file string) (Pins, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Pins
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return p, nil
}

// JSON is the file's content, sorted.
func (p Pins) JSON() []byte {
	b, _ := json.MarshalIndent(p, "", "  ")
	return append(b, '\n')
}

// Diff says how the live list (MCP name -> hash) differs from the pinned
// one of server: "+name" added, "-name" removed, "~name" changed, sorted.
func (p Pins) Diff(server string, live map[string]string) []string {
	pinned := p[server]
	var out []string
	for n, h := range live {
		switch ph, ok := pinned[n]; {
		case !ok:
			out = append(out, "+"+n)
		case ph.Hash != h:
			out = append(out, "~"+n)
		}
	}
	for n := range pinned {
		if _, ok := live[n]; !ok {
			out = append(out, "-"+n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][1:] < out[j][1:] })
	return out
}
