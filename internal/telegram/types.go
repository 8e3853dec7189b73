package telegram

// The Bot API objects choir reads and writes, with the field names of
// https://core.telegram.org/bots/api. Only the fields the gateway uses are
// declared; the rest of each object is ignored when decoding. Every id is an
// int64: user and chat ids need more than 32 bits.

// Update types, for GetUpdates' allowedUpdates.
const (
	UpdateMessage       = "message"
	UpdateEditedMessage = "edited_message"
	UpdateCallbackQuery = "callback_query"
)

// Update is one incoming update. At most one of its optional fields is set.
type Update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *Message       `json:"message,omitempty"`
	EditedMessage *Message       `json:"edited_message,omitempty"`
	CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
	// Refused, when not empty, says why GetUpdates did not decode this
	// update (it broke the JSON limits, or did not fit the Bot API's
	// types): only UpdateID is set, so a poller moves past it and handles
	// the others.
	Refused string `json:"-"`
}

// User is a Telegram user or bot.
type User struct {
	ID           int64  `json:"id"`
	IsBot        bool   `json:"is_bot"`
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name,omitempty"`
	Username     string `json:"username,omitempty"`
	LanguageCode string `json:"language_code,omitempty"`
}

// Chat types.
const (
	ChatPrivate    = "private"
	ChatGroup      = "group"
	ChatSupergroup = "supergroup"
	ChatChannel    = "channel"
)

// Chat is a conversation. In a private chat (a DM) its ID equals the user's.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
}

// Message is a message in a chat. Its date is in Unix seconds.
type Message struct {
	MessageID      int64                 `json:"message_id"`
	From           *User                 `json:"from,omitempty"`
	Chat           Chat                  `json:"chat"`
	Date           int64                 `json:"date"`
	EditDate       int64                 `json:"edit_date,omitempty"`
	ReplyToMessage *Message              `json:"reply_to_message,omitempty"`
	Text           string                `json:"text,omitempty"`
	Entities       []MessageEntity       `json:"entities,omitempty"`
	Caption        string                `json:"caption,omitempty"`
	Document       *Document             `json:"document,omitempty"`
	Photo          []PhotoSize           `json:"photo,omitempty"`
	Voice          *Voice                `json:"voice,omitempty"`
	Audio          *Audio                `json:"audio,omitempty"`
	Video          *Video                `json:"video,omitempty"`
	ReplyMarkup    *InlineKeyboardMarkup `json:"reply_markup,omitempty"`
}

// LargestPhoto returns the biggest of the sizes Telegram offers for a photo
// message, or nil when m carries no photo.
func (m *Message) LargestPhoto() *PhotoSize {
	var best *PhotoSize
	for i := range m.Photo {
		p := &m.Photo[i]
		if best == nil || p.Width*p.Height > best.Width*best.Height ||
			p.Width*p.Height == best.Width*best.Height && p.FileSize > best.FileSize {
			best = p
		}
	}
	return best
}

// MessageEntity marks a span of a message's text (a bot_command, a url...).
// Offset and Length count UTF-16 code units, as TextLength does.
type MessageEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
	URL    string `json:"url,omitempty"`
}

// PhotoSize is one size of a photo or a thumbnail.
type PhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// Document is a general file.
type Document struct {
	FileID       string     `json:"file_id"`
	FileUniqueID string     `json:"file_unique_id"`
	Thumbnail    *PhotoSize `json:"thumbnail,omitempty"`
	FileName     string     `json:"file_name,omitempty"`
	MimeType     string     `json:"mime_type,omitempty"`
	FileSize     int64      `json:"file_size,omitempty"`
}

// Voice is a voice note. Duration is in seconds.
type Voice struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Duration     int    `json:"duration"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int64  `json:"file_size,omitempty"`
}

// Audio is a music file. Duration is in seconds.
type Audio struct {
	FileID       string     `json:"file_id"`
	FileUniqueID string     `json:"file_unique_id"`
	Duration     int        `json:"duration"`
	Performer    string     `json:"performer,omitempty"`
	Title        string     `json:"title,omitempty"`
	FileName     string     `json:"file_name,omitempty"`
	MimeType     string     `json:"mime_type,omitempty"`
	FileSize     int64      `json:"file_size,omitempty"`
	Thumbnail    *PhotoSize `json:"thumbnail,omitempty"`
}

// Video is a video file. Duration is in seconds.
type Video struct {
	FileID       string     `json:"file_id"`
	FileUniqueID string     `json:"file_unique_id"`
	Width        int        `json:"width"`
	Height       int        `json:"height"`
	Duration     int        `json:"duration"`
	Thumbnail    *PhotoSize `json:"thumbnail,omitempty"`
	FileName     string     `json:"file_name,omitempty"`
	MimeType     string     `json:"mime_type,omitempty"`
	FileSize     int64      `json:"file_size,omitempty"`
}

// CallbackQuery is a press on an inline keyboard button. Message is the
// bot's message that carried the button; when that message is too old to be
// accessible, Telegram sends only its chat and message_id, with date 0.
type CallbackQuery struct {
	ID              string   `json:"id"`
	From            User     `json:"from"`
	Message         *Message `json:"message,omitempty"`
	InlineMessageID string   `json:"inline_message_id,omitempty"`
	ChatInstance    string   `json:"chat_instance"`
	Data            string   `json:"data,omitempty"`
}

// InlineKeyboardMarkup is a keyboard shown under a message.
type InlineKeyboardMarkup struct {
	InlineKeyboard [][]InlineKeyboardButton `json:"inline_keyboard"`
}

// InlineKeyboardButton is one button: exactly one of URL and CallbackData is
// set. CallbackData is 1-64 bytes (MaxCallbackData).
type InlineKeyboardButton struct {
	Text         string `json:"text"`
	URL          string `json:"url,omitempty"`
	CallbackData string `json:"callback_data,omitempty"`
}

// Keyboard builds an inline keyboard from rows of buttons.
func Keyboard(rows ...[]InlineKeyboardButton) *InlineKeyboardMarkup {
	return &InlineKeyboardMarkup{InlineKeyboard: rows}
}

// CallbackButton is a button that sends data back in a CallbackQuery.
func CallbackButton(text, data string) InlineKeyboardButton {
	return InlineKeyboardButton{Text: text, CallbackData: data}
}

// BotCommand is one entry of the menu a chat shows for the bot. Command is
// 1-32 characters of a-z, 0-9 and _, without the slash.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// File is a file ready to download with Client.Download. FilePath is valid
// for at least an hour; GetFile again for a fresh one.
type File struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int64  `json:"file_size,omitempty"`
	FilePath     string `json:"file_path,omitempty"`
}

// ResponseParameters is the "parameters" object of a failed call: why it
// failed, in a form a program can act on.
type ResponseParameters struct {
	MigrateToChatID int64 `json:"migrate_to_chat_id,omitempty"`
	RetryAfter      int   `json:"retry_after,omitempty"`
}
