package api

import "time"

// NewTime is t on the wire: nil for the zero time, else its instant and
// the UTC offset it was read in.
func NewTime(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	_, off := t.Zone()
	return &Time{UnixNano: t.UnixNano(), OffsetSeconds: int32(off)}
}

// AsTime is t as a time.Time: the zero time for nil, else the instant in
// a zone of the recorded offset (the local zone when it has that offset,
// so that a view prints the time as the node did).
func (t *Time) AsTime() time.Time {
	if t == nil {
		return time.Time{}
	}
	u := time.Unix(0, t.UnixNano)
	if _, off := u.Zone(); off == int(t.OffsetSeconds) {
		return u
	}
	if t.OffsetSeconds == 0 {
		return u.UTC()
	}
	return u.In(time.FixedZone("", int(t.OffsetSeconds)))
}
