// Package telegram is a hand-written client of the Telegram Bot API
// (https://core.telegram.org/bots/api) for choird's gateway, one Client per
// bot token. It imports only the standard library.
//
// # Methods
//
// Every call is an HTTP POST to <api_base>/bot<token>/<method>, with a JSON
// body, except uploads (multipart/form-data) and downloads (GET
// <api_base>/file/bot<token>/<file_path>). api_base defaults to
// https://api.telegram.org; a local telegram-bot-api server or
// testkit/telegramtest is configured the same way.
//
//	getMe                   updates.go   GetMe
//	getUpdates              updates.go   GetUpdates (long poll)
//	sendMessage             message.go   SendMessage, SendText (split)
//	editMessageText         message.go   EditMessageText
//	editMessageReplyMarkup  message.go   EditMessageReplyMarkup
//	sendDocument            upload.go    SendDocument
//	sendPhoto               upload.go    SendPhoto
//	sendVoice               upload.go    SendVoice (OGG/Opus)
//	sendAudio               upload.go    SendAudio (MP3/M4A)
//	sendVideo               upload.go    SendVideo
//	getFile, file download  file.go      GetFile, Download
//	answerCallbackQuery     callback.go  AnswerCallbackQuery
//	setMyCommands           commands.go  SetMyCommands (per BotCommandScope)
//	deleteMyCommands        commands.go  DeleteMyCommands
//
// Text is always sent plain (no parse_mode), so agent output needs no
// escaping. A reply is sent as reply_parameters with
// allow_sending_without_reply (the Bot API's replacement for
// reply_to_message_id). Uploads stream from an io.Reader through a pipe:
// a file is never held in memory. Downloads refuse files over a size limit
// (the API's own is 20 MB).
//
// GetUpdates takes its long-poll timeout as a time.Duration in whole
// seconds; the request's deadline is that timeout plus the request timeout,
// so the HTTP exchange always outlives the poll, and a poll that hangs past
// it fails instead of blocking the gateway. An http.Client given with a
// Timeout no longer than the poll is refused.
//
// # Errors
//
// Every method answers {"ok":true,"result":...} or
//
//	{"ok":false,"error_code":N,"description":"...",
//	 "parameters":{"retry_after":S,"migrate_to_chat_id":C}}
//
// The latter is returned as an *APIError (errors.As) with Code,
// Description, RetryAfter and MigrateToChatID; IsConflict (409: another
// process polls this token), IsRateLimited (429), IsUnauthorized (401) and
// RetryAfterOf test for the cases a caller acts on. An answer that is not
// this JSON (a proxy's HTML page, a wrong api_base) is an *APIError too,
// with NotJSON set, the HTTP status as Code, and the start of the body.
//
// The token is part of every URL, and Go's *url.Error prints the URL it
// failed on: transport errors are rebuilt with the token replaced by
// "<redacted>" (errors.Is still sees context.DeadlineExceeded and the
// like), every text from the server is scrubbed the same way, and a
// printed Client shows only the API host and the bot id. Never log a
// request URL.
//
// # Splitting
//
// Telegram limits a message to 4096 characters, counted in UTF-16 code
// units (an emoji outside the Basic Multilingual Plane counts 2; TextLength
// counts the same way, so a part that passes here is never "too long"
// there). SplitText cuts a longer text at the last line break that fits,
// else at the last space, else hard on a character boundary, dropping the
// break it cut at; SendText sends the parts in order, the reply on the
// first and the keyboard on the last.
//
// # Pacing
//
// A Limiter paces one bot's sends to Telegram's limits: one message a
// second per chat and 30 a second over all chats (both configurable). The
// caller queues a send function for a chat and waits for its result (Do,
// Limited) or takes a channel (Enqueue). Sends to a chat run one at a time
// in FIFO order; among chats, the one queued first goes first; different
// chats run concurrently. Nothing is dropped: a 429 pauses the whole bot for
// its retry_after and the send runs again at the head of its queue. The
// clock is injectable, so tests advance time rather than sleep.
package telegram
