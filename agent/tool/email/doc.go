// Package email holds the email tools (design §8.7 #9-11, §18.3), one per
// file: choir.email.send (SMTP, internal/smtp), choir.email.receive and
// choir.email.check (IMAP, internal/imap). They run in the container with
// the session's email account, read per call from the dynamic config
// (hosts, ports, address, ca_pem), and the one secret they are granted,
// email ("user:password").
//
// TLS is implicit on ports 465 (SMTP) and 993 (IMAP) and STARTTLS on any
// other port; a server that offers neither is refused before the password
// leaves. Certificates are verified against the container's system roots
// plus the account's ca_pem, if any; nothing skips verification.
//
// Locks (§9): send takes none (§9.5), except file:<path> S on each
// attachment while it reads them; check takes none (it opens the mailbox
// read-only with EXAMINE); receive takes ext:email S, or ext:email X when
// it marks messages seen, so two lanes never both take the same unseen
// messages as new. An account with "sharing": "shared" is read by other
// agents too: receive refuses mark_seen there, since \Seen is the
// mailbox's and would hide the messages from them.
//
// Mail is written by outside senders: the tools return it as data (text,
// names of attachments, never the attachments' bytes) and say so in their
// descriptions.
package email
