package telegramtest

import (
	"net/http"
	"regexp"
)

var commandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// readScope reads a BotCommandScope; absent is the default scope.
func readScope(p *params) (Scope, *reply) {
	v, present, rep := p.object("scope")
	if rep != nil || !present {
		return DefaultScope, rep
	}
	obj, isObj := v.(map[string]any)
	typ, _ := obj["type"].(string)
	if !isObj {
		r := badRequest("can't parse BotCommandScope JSON object")
		return Scope{}, &r
	}
	sc := Scope{Type: typ}
	switch typ {
	case "default", "all_private_chats", "all_group_chats", "all_chat_administrators":
	case "chat", "chat_administrators", "chat_member":
		id, isInt := jsonInt(obj["chat_id"])
		if !isInt || id == 0 {
			r := badRequest("chat_id is empty")
			return Scope{}, &r
		}
		sc.ChatID = id
		if typ == "chat_member" {
			if sc.UserID, isInt = jsonInt(obj["user_id"]); !isInt || sc.UserID == 0 {
				r := badRequest("user_id is empty")
				return Scope{}, &r
			}
		}
	default:
		r := badRequest("unsupported bot command scope type %q", typ)
		return Scope{}, &r
	}
	return sc, nil
}

func (s *Server) setMyCommands(b *bot, p *params, _ *http.Request) reply {
	sc, rep := readScope(p)
	if rep != nil {
		return *rep
	}
	v, present, rep := p.object("commands")
	if rep != nil {
		return *rep
	}
	list, isList := v.([]any)
	if !present || !isList {
		return badRequest("can't parse commands JSON array")
	}
	if len(list) > 100 {
		return badRequest("too many commands specified")
	}
	cmds := []Command{}
	for _, x := range list {
		obj, _ := x.(map[string]any)
		name, _ := obj["command"].(string)
		desc, _ := obj["description"].(string)
		if !commandName.MatchString(name) {
			return badRequest("BOT_COMMAND_INVALID")
		}
		if n := utf16Len(desc); n < 1 || n > 256 {
			return badRequest("command description must be 1-256 characters long")
		}
		cmds = append(cmds, Command{Command: name, Description: desc})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b.commands[sc] = cmds
	s.notify()
	return ok(true)
}

func (s *Server) deleteMyCommands(b *bot, p *params, _ *http.Request) reply {
	sc, rep := readScope(p)
	if rep != nil {
		return *rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(b.commands, sc)
	s.notify()
	return ok(true)
}

func (s *Server) getMyCommands(b *bot, p *params, _ *http.Request) reply {
	sc, rep := readScope(p)
	if rep != nil {
		return *rep
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, c := range b.commands[sc] {
		out = append(out, map[string]any{"command": c.Command, "description": c.Description})
	}
	return ok(out)
}
