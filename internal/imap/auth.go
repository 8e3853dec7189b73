package imap

import (
	"context"
	"encoding/base64"
	"errors"
)

// authenticate logs in over TLS only: AUTHENTICATE PLAIN when the server
// offers AUTH=PLAIN (with the initial response inline under SASL-IR),
// else LOGIN unless the server disabled it.
func (c *Client) authenticate(ctx context.Context, user, pass string) error {
	if !c.tls {
		return &Error{Command: "LOGIN", Text: "refusing to authenticate over an unencrypted connection"}
	}
	if c.Has("AUTH=PLAIN") {
		ir := base64.StdEncoding.EncodeToString([]byte("\x00" + user + "\x00" + pass))
		if c.Has("SASL-IR") {
			_, err := c.run(ctx, "AUTHENTICATE", "AUTHENTICATE PLAIN "+ir, nil)
			return err
		}
		sent := false
		_, err := c.run(ctx, "AUTHENTICATE", "AUTHENTICATE PLAIN", func(string) (string, error) {
			if sent {
				return "", &Error{Command: "AUTHENTICATE", Text: "the server asked for a second PLAIN response"}
			}
			sent = true
			return ir, nil
		})
		return err
	}
	if c.Has("LOGINDISABLED") {
		return &Error{Command: "LOGIN", Text: "the server disabled LOGIN and offers no AUTH=PLAIN; choir cannot log in"}
	}
	if user == "" {
		return &Error{Command: "LOGIN", Text: "no user name; the email secret is \"user:password\""}
	}
	_, err := c.run(ctx, "LOGIN", "LOGIN", nil, astring(user), astring(pass))
	var e *Error
	if errors.As(err, &e) && e.Status == "" {
		e.Command = "LOGIN"
	}
	return err
}
