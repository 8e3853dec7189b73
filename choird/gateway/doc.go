// Package gateway is choird's Telegram gateway (§19): a thin adapter
// between the Bot API (internal/telegram) and the control plane, which it
// reaches through the Control interface it declares. What a command means
// lives behind Control; the gateway parses, checks who may ask, and
// answers.
//
// # Polling
//
// Each configured bot (config.json "gateways", token from the secret it
// names) has one poller: a getUpdates long poll (PollTimeout) whose offset
// is the last update handed on + 1, so the next poll confirms it to
// Telegram. A failed or restarted poll asks again from the same offset:
// no update is skipped, and none is handled twice (an update_id below the
// offset is dropped). A watchdog abandons a poll open longer than
// StallAfter and polls again. Errors back off, doubling from BackoffMin to
// BackoffMax with jitter; a 409 (another process polls the token) is
// logged at error level every time and counted in Status, as is a 401.
// At stop, Run lets the messages being handled finish (ShutdownGrace) and
// confirms the last offset, so a restarted choird does not see them again.
// The id of the UserMessage made from a Telegram message is stable
// ("tg-<gateway>-<chat>-<message_id>"), so one delivered twice after a
// crash is dropped by the agent.
//
// # Routing
//
// A bot's allowlist is the DMs naming it (gateway + user id). Updates from
// anyone else, or from a chat that is not the user's private chat, are
// dropped with a debug line that carries no content. An allowed update
// goes to its chat's worker: one chat's updates are handled one at a time,
// in order, while other chats and the poller carry on. A text goes to the
// DM's bound agent (Control.AgentForDM, Control.SendUserMessage); without
// one, the DM is told how to start one.
//
// # Commands (§19.3)
//
// Regular DMs act on their bound agent only and name no agent; admin DMs
// may name one (/status /stop /restart /update /cores /compact /events
// [agent]) and have the system commands (/start /update_all /config
// /workspace /secret /agent). /start <agent> [key=value…] binds the DM it
// is sent from and is refused on a DM already bound. Commands the control
// plane does not back yet go through Control.Command, which answers
// ErrNotAvailable: the DM is told "not available in this choird yet".
// Each bot's menu is set per chat scope: the regular menu as the default,
// the admin menu on each admin DM's chat.
//
// # Files (§19.5)
//
// Inbound documents, photos (largest size), voice notes, audio and videos
// are stored in the bound agent's workspace as
// .choirtmp/recv/<message id>-<sanitized name> (never overwriting, at most
// MaxFileSize), reached through an os.Root so that no symlink in the
// workspace leads the write outside it, and passed on as a UserMessage
// attachment with the caption as text. With a Transcriber (config.json
// "transcription"), a voice note or audio file is transcribed by choird
// and the text is the message, the audio still attached; a failed or empty
// transcription passes the file on all the same, and both the user and the
// agent are told why there is no text. recv/ is capped (RecvMaxFiles,
// RecvMaxBytes): a new file removes the oldest regular files to make room
// and the agent's message names them; a file over the cap by itself is
// refused. A message's files are removed once the agent acknowledges it:
// its reply to the message, and the reports of the core jobs that reply
// names (ack.go).
//
// Deliver (the lifecycle's Outbox) queues an agent's message in the DM's
// durable outbox in Postgres and returns (outbox.go); the DM's sender
// (sender.go) then sends it, part by part, exactly once except in the one
// window it documents. A message is its text, split at 4096 characters,
// in order, through the bot's Limiter, then each file it names
// under .choirtmp/send/ by its content (send.go): a JPEG or PNG within
// Telegram's photo limits as a photo, an OGG Opus file (what
// choir.tts.speak writes) as a voice message, MP3/M4A as audio, MP4 as a
// video, anything else as a document; a photo, voice or audio Telegram
// refuses goes again as a document. A path outside .choirtmp/send/, a
// symlink or a missing file refuses the whole message when it is queued;
// the files that go are moved to .choirtmp/outbox/ then and deleted once
// sent; a file over 50 MB, past the cap on one message (SendMaxFiles,
// SendMaxBytes) or refused by Telegram is not sent and the DM told in one
// line per file; a network or server failure is retried. A chat Telegram
// refuses (403, chat not found) fails its queued messages with the reason;
// an agent past its cap of queued messages (Config.OutboxMax) is refused
// with ErrOutboxFull.
//
// # Approvals (§19.6)
//
// The Gateway is the approval pipeline's Notifier: a request goes to the
// agent's bound DM with [Approve] [Reject] buttons whose callback data is
// "ap:<approval id>:y" or ":n"; a press decides through Approvals.Decide,
// answers the callback, and the outcome and who decided replace the
// message. /approve and /reject take an id, or answer the request message
// they reply to, or, alone, decide the one pending approval or list
// several by number for the next message to pick. A regular DM may decide
// only its bound agent's approvals, whatever the callback data says.
package gateway
