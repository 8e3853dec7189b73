// Package imap is a minimal hand-written IMAP4rev1 client (RFC 3501; the
// subset also valid in IMAP4rev2, RFC 9051) for choir's email tools: it
// reads a mailbox, it does not manage one. It imports only the standard
// library.
//
// # Commands
//
//	connect     client.go   implicit TLS (port 993) or STARTTLS (required)
//	CAPABILITY  client.go   after the greeting and again after STARTTLS
//	AUTHENTICATE PLAIN / LOGIN   auth.go   PLAIN when AUTH=PLAIN is offered, else LOGIN
//	SELECT / EXAMINE   mailbox.go   EXISTS, UIDVALIDITY, UIDNEXT
//	UID SEARCH  mailbox.go  UNSEEN and/or SINCE <date>
//	UID FETCH   fetch.go    UID FLAGS RFC822.SIZE ENVELOPE [BODY.PEEK[]]
//	UID STORE   fetch.go    +FLAGS.SILENT (\Seen)
//	LOGOUT      client.go
//
// # Responses and bounds
//
// parse.go reads one response at a time: tagged and untagged status
// responses (their text read as text), continuation requests, and data
// responses as a tree of atoms, quoted strings, literals ({n} followed by n
// bytes), NIL and nested lists. Everything read is bounded: a line (outside
// literals) by MaxLine, one literal by Config.MaxLiteral, nesting by
// maxDepth. A literal over the cap is refused before any of it is read
// (*TooLargeError) and the connection is closed, since the stream can no
// longer be followed; a 50 MB message therefore costs nothing but the
// error. Every command runs under a deadline (the earlier of the context's
// and Config.Timeout), so a server that never answers ends in a timeout.
//
// # Errors
//
// A tagged NO or BAD becomes an *Error naming the command (never its
// arguments: LOGIN carries the password), the status and the server's
// text. An untagged BYE before the end of a command becomes an *Error with
// status BYE.
package imap
