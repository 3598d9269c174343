package install

import "time"

// hookFlags are the flags the hook command carries: remote approval.
func (o Options) hookFlags() string {
	if !o.RemoteApprove {
		return ""
	}
	s := " --remote-approve"
	if o.ApproveWait > 0 {
		s += " --approve-wait " + o.ApproveWait.Round(time.Millisecond).String()
	}
	return s
}
