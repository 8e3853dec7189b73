package telegramtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// bot is the state of one registered bot. Every field is guarded by the
// server's mutex.
type bot struct {
	id       BotID
	token    string
	username string

	updates []queuedUpdate // queued, not yet confirmed by an offset
	allowed []string       // the last allowed_updates; nil is the default set
	poll    *longPoll      // the getUpdates waiting for updates, if any

	chats    map[int64]*chat
	files    map[string]*storedFile // by file_id
	paths    map[string]*storedFile // by file_path
	lastFile int

	queries  map[string]*query // callback queries by id
	answers  []Answer
	commands map[Scope][]Command

	calls    []Call
	inflight map[string]int // calls being served, by method
	faults   map[string][]Fault
}

func newBot(id BotID, token, username string) *bot {
	return &bot{
		id:       id,
		token:    token,
		username: username,
		chats:    make(map[int64]*chat),
		files:    make(map[string]*storedFile),
		paths:    make(map[string]*storedFile),
		queries:  make(map[string]*query),
		commands: make(map[Scope][]Command),
		inflight: make(map[string]int),
		faults:   make(map[string][]Fault),
	}
}

// user is the bot's own User object.
func (b *bot) user() map[string]any {
	return map[string]any{"id": int64(b.id), "is_bot": true, "first_name": b.username, "username": b.username}
}

type queuedUpdate struct {
	id   int64
	body json.RawMessage // the whole Update object
}

type longPoll struct {
	aborted chan struct{} // closed when a newer poll takes over: answer 409
}

// defaultUpdates are the update types a bot gets when allowed_updates was
// never set or set empty: all but chat_member and the reactions.
var excludedByDefault = []string{"chat_member", "message_reaction", "message_reaction_count"}

func (b *bot) allows(kind string) bool {
	if len(b.allowed) == 0 {
		return !slices.Contains(excludedByDefault, kind)
	}
	return slices.Contains(b.allowed, kind)
}

// chat is one conversation of a bot: its messages, both ways, and what the
// bot did in it.
type chat struct {
	id       int64
	lastMsg  int64
	messages map[int64]*message
	sent     []Sent
	edits    []Edit
}

func (b *bot) chat(id int64) *chat {
	c := b.chats[id]
	if c == nil {
		c = &chat{id: id, messages: make(map[int64]*message)}
		b.chats[id] = c
	}
	return c
}

// message is a message as the fake knows it: the JSON object it answers
// with, and the parts an edit compares.
type message struct {
	obj      map[string]any
	fromBot  bool
	text     string
	hasText  bool
	keyboard [][]Button
}

// newMessage starts a message in c from sender, with the next id.
func (c *chat) newMessage(from map[string]any, fromBot bool) *message {
	c.lastMsg++
	m := &message{
		obj: map[string]any{
			"message_id": c.lastMsg,
			"from":       from,
			"chat":       chatObject(c.id),
			"date":       time.Now().Unix(),
		},
		fromBot: fromBot,
	}
	c.messages[c.lastMsg] = m
	return m
}

func (m *message) id() int64 { return m.obj["message_id"].(int64) }

func (m *message) setText(text string) {
	m.text, m.hasText = text, true
	m.obj["text"] = text
}

func (m *message) setKeyboard(kb [][]Button, raw any) {
	m.keyboard = kb
	if kb == nil {
		delete(m.obj, "reply_markup")
	} else {
		m.obj["reply_markup"] = raw
	}
}

// snapshot is the message's JSON now, safe to hand out after s.mu is
// released.
func (m *message) snapshot() json.RawMessage {
	b, err := json.Marshal(m.obj)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encode message: %v", err))
	}
	return b
}

// chatObject is the Chat of a chat id: private for a user's id, a group or
// supergroup for a negative one.
func chatObject(id int64) map[string]any {
	switch {
	case id <= -1000000000000:
		return map[string]any{"id": id, "type": "supergroup", "title": fmt.Sprintf("Supergroup %d", id)}
	case id < 0:
		return map[string]any{"id": id, "type": "group", "title": fmt.Sprintf("Group %d", id)}
	}
	return map[string]any{"id": id, "type": "private", "first_name": fmt.Sprintf("User %d", id)}
}

// userObject is the User a test's user id stands for.
func userObject(id int64) map[string]any {
	return map[string]any{"id": id, "is_bot": false, "first_name": fmt.Sprintf("User %d", id), "language_code": "en"}
}

// storedFile is a file the bot can getFile and download: sent to it by a
// user, or uploaded by it.
type storedFile struct {
	id, uniqueID, path string
	data               []byte
}

// addFile stores data under a new file_id, with a path in dir.
func (b *bot) addFile(dir, ext string, data []byte) *storedFile {
	b.lastFile++
	f := &storedFile{
		id:       fmt.Sprintf("F%d-%d-%s", b.id, b.lastFile, dir),
		uniqueID: fmt.Sprintf("U%d-%d", b.id, b.lastFile),
		path:     fmt.Sprintf("%s/file_%d%s", dir, b.lastFile, ext),
		data:     data,
	}
	b.files[f.id] = f
	b.paths[f.path] = f
	return f
}

type query struct {
	id        string
	chatID    int64
	messageID int64
	data      string
	answered  bool
}

func (b *bot) takeFault(method string) (Fault, bool) {
	q := b.faults[method]
	if len(q) == 0 {
		return Fault{}, false
	}
	f := q[0]
	b.faults[method] = q[1:]
	return f, true
}
