package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"choir/internal/ctl"
)

// checkChoird asks the admin socket for choird's status: running, healthy
// (nothing degraded), and for how long.
func (d *Doctor) checkChoird(ctx context.Context) Result {
	c := ctl.NewClient(d.Home.AdminSocket())
	defer c.Close()
	st, err := c.Status(ctx)
	if errors.Is(err, ctl.ErrNotRunning) {
		return bad(Fail, "start it: systemctl start choird (as installed by make install), or choird --home "+d.Home.Dir,
			"choird is not running (nothing answers on %s)", d.Home.AdminSocket())
	}
	if err != nil {
		return bad(Fail, "check choird's log (choirctl logs choird, or journalctl -u choird)", "choird's admin socket %s: %v", d.Home.AdminSocket(), err)
	}
	d.set(ctx, func() { d.status = st })
	up := d.now().Sub(st.StartedAt).Round(time.Second)
	detail := fmt.Sprintf("running (pid %d, up %s, config %d, %d agents running)", st.PID, up, st.ConfigVersion, st.AgentsRunning)
	switch {
	case len(st.Degraded) > 0:
		return bad(Fail, "see each reason's advice; choirctl status shows it too", "%s but degraded: %s", detail, strings.Join(st.Degraded, "; "))
	case !st.Healthy:
		return bad(Warn, "wait for its start to finish, then run the doctor again (choirctl status shows each startup step)", "%s but not healthy yet", detail)
	}
	return ok("%s, healthy", detail)
}
