package telegram

import "context"

// CallbackAnswer is what the user sees after pressing a button: nothing
// (the zero value), a brief notice at the top of the chat, or an alert.
type CallbackAnswer struct {
	Text      string // 0-200 characters
	ShowAlert bool
}

type answerCallbackQueryParams struct {
	CallbackQueryID string `json:"callback_query_id"`
	Text            string `json:"text,omitempty"`
	ShowAlert       bool   `json:"show_alert,omitempty"`
}

// AnswerCallbackQuery acknowledges a button press. Every CallbackQuery must
// be answered, even with nothing to say, or the user's client shows a
// spinner on the button until it gives up.
func (c *Client) AnswerCallbackQuery(ctx context.Context, queryID string, ans CallbackAnswer) error {
	return c.call(ctx, "answerCallbackQuery", answerCallbackQueryParams{
		CallbackQueryID: queryID, Text: ans.Text, ShowAlert: ans.ShowAlert,
	}, nil)
}
