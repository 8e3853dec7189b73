// Package smtp sends one email over SMTP (RFC 5321) on the standard
// library's net/smtp: the session, its TLS and its authentication live in
// send.go, the message's MIME form (RFC 5322, 2045-2047) in message.go,
// its header lines folded in header.go. It imports only the standard
// library.
//
// # Header lines
//
// Every header line, the parts' included, keeps to 76 characters (RFC 2047
// §2; RFC 5322 §2.1.1 asks at most 78, allows 998). A value folds at the
// spaces between its tokens; text that is not plain printable ASCII in
// short words (a subject, a display name) goes as B encoded-words of at
// most 75 characters, each holding whole UTF-8 characters; a long or
// non-ASCII parameter (an attachment's file name) goes RFC 2231 encoded,
// in sections. An address is never split: a long one may stretch its line
// up to 998 characters, and one longer still is refused, naming its header.
//
// # Session
//
// Send dials the server with a deadline, then:
//
//	port 465 (or TLS: Implicit)   TLS handshake first, then EHLO
//	any other port (StartTLS)     EHLO, STARTTLS (required), EHLO again
//	AUTH                          PLAIN when the server offers it, else LOGIN
//	MAIL FROM, RCPT TO (each), DATA, QUIT
//
// Credentials never cross an unencrypted link: a server that does not offer
// STARTTLS is refused before AUTH, and both mechanisms check that the
// connection is TLS before they answer. The certificate is verified against
// the system roots or the RootCAs given (a self-hosted server's private CA);
// there is no option to skip verification.
//
// Every read and write runs under the connection's deadline: the earlier of
// the context's deadline and Config.Timeout, so a server that stops
// answering ends the call with a timeout error, not a hang.
//
// # Errors
//
// A reply the server refused becomes an *Error with the stage (greeting,
// starttls, auth, mail, rcpt, data), the reply code and the server's text,
// so a caller can tell a wrong password (535 at auth) from a refused
// recipient (550 at rcpt).
package smtp
