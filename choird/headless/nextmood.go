package headless

import (
	"context"
	"encoding/json"
)

// NextMood is the mood the mood guards chose for a work item's next run:
// the target of the last MoodTransition recorded on its runs, "" when the
// guards never moved it (a run then starts in CALM). A run started without
// a mood (choirctl run start without --mood, POST /run without "mood", a
// schedule's run) starts in it.
func (d *Director) NextMood(ctx context.Context, workItem string) (string, error) {
	runs, err := d.store.Runs(ctx, "", workItem) // newest first
	if err != nil {
		return "", err
	}
	for _, hr := range runs {
		rs, err := d.store.Receipts(ctx, hr.ID, 0)
		if err != nil {
			return "", err
		}
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].Kind != KindMoodTransition {
				continue
			}
			var t struct {
				To string `json:"to"`
			}
			if json.Unmarshal(rs[i].Body, &t) == nil && moodRE.MatchString(t.To) {
				return t.To, nil
			}
		}
	}
	return "", nil
}
