package config

import (
	"strings"
	"testing"
)

// TestSnapshotTunables: the snapshot cadence defaults to every 500
// revisions or 60 s, takes other values, and refuses ones that would
// never snapshot or snapshot at every heartbeat, naming the field.
func TestSnapshotTunables(t *testing.T) {
	example, secrets := readExample(t)
	if d := DefaultTunables(); d.SnapshotEveryRevs != 500 || d.SnapshotIntervalMS != 60000 {
		t.Errorf("defaults = every %d revisions, %d ms; want 500, 60000", d.SnapshotEveryRevs, d.SnapshotIntervalMS)
	}
	c, err := Parse(mutate(t, example, func(m map[string]any) { m["snapshot_every_revs"], m["snapshot_interval_ms"] = 20, 5000 }))
	if err == nil {
		err = Validate(c, secrets)
	}
	if err != nil || c.SnapshotEveryRevs != 20 || c.SnapshotIntervalMS != 5000 {
		t.Errorf("snapshot_every_revs 20, snapshot_interval_ms 5000 = %d, %d, %v; want taken", c.SnapshotEveryRevs, c.SnapshotIntervalMS, err)
	}
	if d := c.DynamicFor(1, "", "", "", "", "", "", ""); d.Tunables.SnapshotEveryRevs != 20 {
		t.Errorf("the dynamic config the agent gets has snapshot_every_revs %d; want 20", d.Tunables.SnapshotEveryRevs)
	}
	for field, value := range map[string]any{
		"snapshot_every_revs": 0, "snapshot_interval_ms": 999,
	} {
		for _, v := range []any{value, -1} {
			c, err := Parse(mutate(t, example, func(m map[string]any) { m[field] = v }))
			if err == nil {
				err = Validate(c, secrets)
			}
			ps, _ := err.(Problems)
			found := false
			for _, p := range ps {
				found = found || (p.Path == field && strings.Contains(p.Message, "at least"))
			}
			if !found {
				t.Errorf("%s = %v: problems %v; want one at %s saying the minimum", field, v, err, field)
			}
		}
	}
}
