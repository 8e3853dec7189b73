package imap

import (
	"context"
	"fmt"
	"mime"
	"net/mail"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Address is one address of an envelope.
type Address struct {
	Name    string
	Address string
}

// String is "Name <address>" for display (not header syntax).
func (a Address) String() string {
	if a.Name == "" {
		return a.Address
	}
	return a.Name + " <" + a.Address + ">"
}

// Message is what UID FETCH returned for one message.
type Message struct {
	UID   uint32
	Flags []string
	// Size is RFC822.SIZE, the message's size in bytes.
	Size      int64
	Date      time.Time // the envelope's Date header; zero when missing
	Subject   string    // RFC 2047 words decoded
	From      []Address
	To        []Address
	Cc        []Address
	MessageID string
	// Body is the whole message (BODY[]), when asked for.
	Body []byte
}

// Seen reports whether the message has the \Seen flag.
func (m *Message) Seen() bool {
	for _, f := range m.Flags {
		if strings.EqualFold(f, `\Seen`) {
			return true
		}
	}
	return false
}

// Fetch returns the UID, flags, size and envelope of each message of uids,
// and its whole body when body is set (BODY.PEEK[], which leaves \Seen
// alone). Messages come back sorted by UID; a UID the mailbox no longer
// has is left out.
func (c *Client) Fetch(ctx context.Context, uids []uint32, body bool) ([]Message, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	items := "UID FLAGS RFC822.SIZE ENVELOPE"
	if body {
		items += " BODY.PEEK[]"
	}
	untagged, err := c.run(ctx, "UID FETCH", "UID FETCH "+uidSet(uids)+" ("+items+")", nil)
	if err != nil {
		return nil, err
	}
	byUID := map[uint32]*Message{}
	for _, r := range untagged {
		if len(r.Fields) != 3 {
			continue
		}
		if s, _ := str(r.Fields[1]); !strings.EqualFold(s, "FETCH") {
			continue
		}
		list, ok := r.Fields[2].(List)
		if !ok {
			return nil, &Error{Command: "UID FETCH", Text: "a FETCH response without its list of items"}
		}
		m, err := parseFetch(list)
		if err != nil {
			return nil, &Error{Command: "UID FETCH", Text: err.Error()}
		}
		if m.UID == 0 {
			continue // an unsolicited FETCH (a flag change), not ours
		}
		if old, ok := byUID[m.UID]; ok { // a server may split items over responses
			merge(old, m)
		} else {
			byUID[m.UID] = m
		}
	}
	out := make([]Message, 0, len(byUID))
	for _, m := range byUID {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out, nil
}

func merge(dst, src *Message) {
	if src.Flags != nil {
		dst.Flags = src.Flags
	}
	if src.Size != 0 {
		dst.Size = src.Size
	}
	if src.Body != nil {
		dst.Body = src.Body
	}
	if src.Subject != "" || src.From != nil || !src.Date.IsZero() {
		dst.Date, dst.Subject, dst.From, dst.To, dst.Cc, dst.MessageID = src.Date, src.Subject, src.From, src.To, src.Cc, src.MessageID
	}
}

// parseFetch reads the item/value pairs of one FETCH response.
func parseFetch(list List) (*Message, error) {
	m := &Message{}
	for i := 0; i+1 < len(list); i += 2 {
		name, _ := str(list[i])
		v := list[i+1]
		switch up := strings.ToUpper(name); {
		case up == "UID":
			s, _ := str(v)
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("UID %q is not a number", s)
			}
			m.UID = uint32(n)
		case up == "FLAGS":
			flags, ok := v.(List)
			if !ok && v != nil {
				return nil, fmt.Errorf("FLAGS is not a list")
			}
			m.Flags = []string{}
			for _, f := range flags {
				if s, ok := str(f); ok {
					m.Flags = append(m.Flags, s)
				}
			}
		case up == "RFC822.SIZE":
			s, _ := str(v)
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("RFC822.SIZE %q is not a number", s)
			}
			m.Size = n
		case up == "ENVELOPE":
			env, ok := v.(List)
			if !ok {
				return nil, fmt.Errorf("ENVELOPE is not a list")
			}
			if err := parseEnvelope(env, m); err != nil {
				return nil, err
			}
		case strings.HasPrefix(up, "BODY[]") || up == "RFC822":
			if v == nil {
				m.Body = []byte{}
				continue
			}
			if lit, ok := v.(Literal); ok { // the usual form: no copy
				m.Body = lit
				continue
			}
			s, ok := str(v)
			if !ok {
				return nil, fmt.Errorf("%s is not a string", name)
			}
			m.Body = []byte(s)
		}
	}
	return m, nil
}

var wordDecoder = &mime.WordDecoder{}

// decodeWords decodes RFC 2047 encoded-words; text it cannot decode (an
// unknown charset) stays as sent.
func decodeWords(s string) string {
	if d, err := wordDecoder.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

// parseEnvelope reads (date subject from sender reply-to to cc bcc
// in-reply-to message-id).
func parseEnvelope(env List, m *Message) error {
	if len(env) < 10 {
		return fmt.Errorf("ENVELOPE has %d fields; want 10", len(env))
	}
	if s, ok := str(env[0]); ok {
		if d, err := mail.ParseDate(s); err == nil {
			m.Date = d
		}
	}
	if s, ok := str(env[1]); ok {
		m.Subject = decodeWords(s)
	}
	var err error
	if m.From, err = addresses(env[2]); err != nil {
		return fmt.Errorf("ENVELOPE from: %w", err)
	}
	if m.To, err = addresses(env[5]); err != nil {
		return fmt.Errorf("ENVELOPE to: %w", err)
	}
	if m.Cc, err = addresses(env[6]); err != nil {
		return fmt.Errorf("ENVELOPE cc: %w", err)
	}
	m.MessageID, _ = str(env[9])
	return nil
}

// addresses reads NIL or a list of (name adl mailbox host). Group syntax
// (a NIL host marking a group's start or end) is flattened away.
func addresses(v any) ([]Address, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.(List)
	if !ok {
		return nil, fmt.Errorf("want a list of addresses")
	}
	var out []Address
	for _, a := range list {
		f, ok := a.(List)
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("want (name adl mailbox host) for each address")
		}
		name, _ := str(f[0])
		box, _ := str(f[2])
		host, ok := str(f[3])
		if !ok {
			continue // group start or end
		}
		out = append(out, Address{Name: decodeWords(name), Address: box + "@" + host})
	}
	return out, nil
}

// MarkSeen adds \Seen to the messages of uids.
func (c *Client) MarkSeen(ctx context.Context, uids []uint32) error {
	if len(uids) == 0 {
		return nil
	}
	_, err := c.run(ctx, "UID STORE", "UID STORE "+uidSet(uids)+` +FLAGS.SILENT (\Seen)`, nil)
	return err
}
