package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"choir/internal/jsonlimit"
)

// GetMe returns the bot's own user: a cheap check that the token works.
func (c *Client) GetMe(ctx context.Context) (*User, error) {
	var u User
	if err := c.call(ctx, "getMe", nil, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

type getUpdatesParams struct {
	Offset         int64     `json:"offset,omitempty"`
	Timeout        int64     `json:"timeout,omitempty"`
	AllowedUpdates *[]string `json:"allowed_updates,omitempty"`
}

// GetUpdates long-polls for updates. offset is one more than the highest
// update_id already handled: asking with it confirms every earlier update,
// which Telegram then forgets (0 asks for the earliest unconfirmed one).
// timeout is how long Telegram may hold the request open waiting for an
// update, in whole seconds (rounded up; 0 is a short poll). allowedUpdates
// names the update types wanted (UpdateMessage, UpdateCallbackQuery...);
// nil keeps the previous setting and an empty, non-nil slice asks for the
// default set.
//
// The request's deadline is the poll timeout plus the request timeout, so a
// poll that hangs past what Telegram promised ends with an error wrapping
// context.DeadlineExceeded. A 409 (IsConflict) means another process polls
// with the same token.
func (c *Client) GetUpdates(ctx context.Context, offset int64, timeout time.Duration, allowedUpdates []string) ([]Update, error) {
	secs := int64(0)
	if timeout > 0 {
		secs = int64((timeout + time.Second - 1) / time.Second)
	}
	poll := time.Duration(secs) * time.Second
	if c.http.Timeout > 0 && c.http.Timeout <= poll {
		return nil, fmt.Errorf("telegram getUpdates: the HTTP client's timeout %v does not exceed the long-poll timeout %v; every poll would be cut short (raise the client timeout or lower the poll timeout)", c.http.Timeout, poll)
	}
	p := getUpdatesParams{Offset: offset, Timeout: secs}
	if allowedUpdates != nil {
		allowed := append([]string{}, allowedUpdates...)
		p.AllowedUpdates = &allowed
	}
	var raw []json.RawMessage
	if err := c.callWithin(ctx, poll+c.requestTimeout, "getUpdates", p, &raw); err != nil {
		return nil, err
	}
	updates := make([]Update, 0, len(raw))
	for i, r := range raw {
		u, err := decodeUpdate(r)
		if err != nil {
			return nil, fmt.Errorf("telegram getUpdates: update %d of %d: %w", i+1, len(raw), err)
		}
		updates = append(updates, u)
	}
	return updates, nil
}

// updateLimits hold each update to the nesting of choir's other JSON readers
// and to valid UTF-8 (which encoding/json would silently repair); the whole
// answer is bounded by maxAnswerBytes.
var updateLimits = jsonlimit.Limits{MaxDepth: jsonlimit.DefaultMaxDepth}

// decodeUpdate decodes one update of a getUpdates answer. An update that
// breaks updateLimits or does not fit Update comes back with only its id and
// Refused saying why, so that one bad update neither stops the bot nor is
// handed on half-decoded; only an update without a readable update_id, which
// no poller could move past, is an error.
func decodeUpdate(raw json.RawMessage) (Update, error) {
	var u Update
	err := jsonlimit.Check(raw, updateLimits)
	if err == nil {
		if err = json.Unmarshal(raw, &u); err == nil {
			return u, nil
		}
		err = fmt.Errorf("does not fit the Bot API's Update: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	var id struct {
		UpdateID *int64 `json:"update_id"`
	}
	if json.Unmarshal(raw, &id) != nil || id.UpdateID == nil {
		return Update{}, fmt.Errorf("no readable update_id, and %v", err)
	}
	return Update{UpdateID: *id.UpdateID, Refused: err.Error()}, nil
}
