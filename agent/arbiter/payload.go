package arbiter

// Hand-written encoders of the tool events' payloads: the arbiter commits
// three per call, and reflection was most of its time. Each writes the same
// canonical JSON that json.Marshal writes for the payload type (members in
// the sorted order the types declare, omitempty honoured; raw members must
// be canonical already); TestPayloadEncoders checks they agree.

import "strconv"

func appendMember(b []byte, first bool, name string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func (p *CallRequested) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendMember(b, true, "id")
	b = appendString(b, p.ID)
	if len(p.Input) > 0 {
		b = appendMember(b, false, "input")
		b = append(b, p.Input...)
	}
	if p.Job != "" {
		b = appendMember(b, false, "job")
		b = appendString(b, p.Job)
	}
	if p.RawInput != "" {
		b = appendMember(b, false, "raw_input")
		b = appendString(b, p.RawInput)
	}
	b = appendMember(b, false, "tool")
	b = appendString(b, p.Tool)
	if p.ToolCallID != "" {
		b = appendMember(b, false, "tool_call_id")
		b = appendString(b, p.ToolCallID)
	}
	return append(b, '}')
}

func (p *CallCommitted) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendMember(b, true, "id")
	b = appendString(b, p.ID)
	if p.Job != "" {
		b = appendMember(b, false, "job")
		b = appendString(b, p.Job)
	}
	b = appendMember(b, false, "locks")
	if p.Locks == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, l := range p.Locks {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"mode":`...)
			b = appendString(b, l.Mode)
			b = append(b, `,"resource":`...)
			b = appendString(b, l.Resource)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendMember(b, false, "tool")
	b = appendString(b, p.Tool)
	return append(b, '}')
}

func (p *ResultCommitted) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendMember(b, true, "duration_ms")
	b = strconv.AppendInt(b, p.DurationMS, 10)
	b = appendMember(b, false, "id")
	b = appendString(b, p.ID)
	if p.Job != "" {
		b = appendMember(b, false, "job")
		b = appendString(b, p.Job)
	}
	b = appendMember(b, false, "lock_wait_ms")
	b = strconv.AppendInt(b, p.LockWaitMS, 10)
	b = appendMember(b, false, "output")
	if len(p.Output) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, p.Output...)
	}
	b = appendMember(b, false, "status")
	b = appendString(b, p.Status)
	b = appendMember(b, false, "tool")
	b = appendString(b, p.Tool)
	if p.ToolCallID != "" {
		b = appendMember(b, false, "tool_call_id")
		b = appendString(b, p.ToolCallID)
	}
	return append(b, '}')
}
