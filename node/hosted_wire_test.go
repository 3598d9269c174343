package node

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/hosted"
	"github.com/harn-dev/harn/node/hosted/hostedsvc"
)

// TestMaxHostedRefusalHasItsOwnReason: a start over --max-hosted is
// ResourceExhausted with the hosted-full reason (the CLI's exit 23);
// --max-hosted 0 is no config.
func TestMaxHostedRefusalHasItsOwnReason(t *testing.T) {
	err := hostedsvc.Status(fmt.Errorf("%w: node n hosts 8", hosted.ErrTooMany))
	if status.Code(err) != codes.ResourceExhausted || apigrpc.Reason(err) != api.ReasonHostedFull {
		t.Fatalf("%v (reason %q)", err, apigrpc.Reason(err))
	}
	cfg := testConfig(t, t.TempDir())
	cfg.Hosted.Max = 0
	if _, err := New(cfg); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--max-hosted 0") {
		t.Fatalf("--max-hosted 0: %v", err)
	}
}
