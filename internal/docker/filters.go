package docker

import (
	"encoding/json"
	"net/url"
)

// Filters selects objects in list calls, sent as the JSON `filters` query
// parameter: key to accepted values, e.g.
//
//	docker.Filters{"label": {"choir.agent=alice", "choir.role"}}
//
// Values of one key are ORed (for "label", ANDed: every label must match);
// keys are ANDed.
type Filters map[string][]string

// addTo sets the filters parameter on q when f selects anything.
func (f Filters) addTo(q url.Values) error {
	if len(f) == 0 {
		return nil
	}
	b, err := json.Marshal(map[string][]string(f))
	if err != nil {
		return err
	}
	q.Set("filters", string(b))
	return nil
}
