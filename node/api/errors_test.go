package api

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestErrMapsEachReasonToItsSentinel: a status that carries one of the
// node's reasons unwraps to its sentinel and keeps its code and message;
// one without a reason, or of another domain, maps to none.
func TestErrMapsEachReasonToItsSentinel(t *testing.T) {
	for reason, want := range reasonErrs {
		err := Err(WithReason(codes.Unavailable, reason, "coord: the owner is unreachable"))
		if !errors.Is(err, want) {
			t.Errorf("%s: %v is not %v", reason, err, want)
		}
		var se *StatusError
		if !errors.As(err, &se) || se.Code != codes.Unavailable || se.Reason != reason || se.Message != "coord: the owner is unreachable" {
			t.Errorf("%s: %+v", reason, se)
		}
	}
	plain := Err(status.Error(codes.Unavailable, "coord: not a reason"))
	for _, s := range reasonErrs {
		if errors.Is(plain, s) {
			t.Errorf("a status without a reason is %v", s)
		}
	}
	other := status.New(codes.Unavailable, "x")
	if Reason(other.Err()) != "" || Err(nil) != nil {
		t.Error("no status, no reason")
	}
	if e := errors.New("not a status"); Err(e) != e {
		t.Error("an error that is no status changed")
	}
}

// TestTimeKeepsItsInstantAndOffset: a time crosses the wire with its
// instant and offset, the zero time as nil.
func TestTimeKeepsItsInstantAndOffset(t *testing.T) {
	if NewTime(time.Time{}) != nil || !(*Time)(nil).AsTime().IsZero() {
		t.Fatal("the zero time is not nil on the wire")
	}
	for _, in := range []time.Time{
		time.Date(2026, 12, 1, 23, 4, 5, 123456789, time.UTC),
		time.Date(2026, 12, 1, 23, 4, 5, 6, time.FixedZone("X", 5*3600+1800)),
		time.Date(1969, 7, 20, 20, 17, 0, 0, time.Local),
		time.Unix(0, 0).UTC(),
	} {
		out := NewTime(in).AsTime()
		if !out.Equal(in) || out.Format(time.RFC3339Nano) != in.Format(time.RFC3339Nano) {
			t.Errorf("%s came back as %s", in.Format(time.RFC3339Nano), out.Format(time.RFC3339Nano))
		}
	}
}
