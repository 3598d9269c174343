// Package trustadmin is the room of the operator's trust operations on
// the local socket: the mesh's (the MeshAdmin service: join tokens, the
// gossip keyring, a removed node's revocation, the CA's rotation; and
// `harn mesh init` before a node runs) and the project directories'
// (`harn trust`: the DirTrust call on the trusted directories of
// node/dirtrust, which it opens, and the tasks' ProjectTrust). It reaches
// the mesh only through Mesh, declared here.
package trustadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/dirtrust"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/node/trust"
)

// Mesh is what the room needs of the mesh: its admin operations.
type Mesh interface {
	Admin(ctx context.Context, op string, args cluster.AdminArgs) (any, error)
}

// Deps wires the room to the rest of the node.
type Deps struct {
	Node    string
	DataDir string
	Log     *slog.Logger
	// Mesh is the mesh, nil without it.
	Mesh func() Mesh
}

// Service is the trust room.
type Service struct {
	Deps
	dirs   *dirtrust.Store
	undeny func()
}

// New builds the room. It does no I/O.
func New(d Deps) *Service { return &Service{Deps: d} }

// TrustLocal is the room's part of the Local service.
type TrustLocal struct{ *Service }

// Local is the room's part of the local socket.
func (s *Service) Local() *TrustLocal { return &TrustLocal{s} }

// AdminCA operations, in wire.
const (
	AdminCARotate = wire.AdminCARotate
	AdminCAFinish = wire.AdminCAFinish
	AdminCAStatus = wire.AdminCAStatus
)

// CAStatus is the CA rotation's state, in wire.
type CAStatus = wire.CAStatus

// The operator's mesh trust operations, served on the local socket only
// (MeshAdmin): join tokens, the gossip keyring, revocation of a removed
// node's certificates.

// Admin operations and their bodies, in wire.
const (
	AdminTokenCreate = wire.AdminTokenCreate
	AdminTokenList   = wire.AdminTokenList
	AdminTokenRevoke = wire.AdminTokenRevoke
	AdminKeyringList = wire.AdminKeyringList
	AdminKeyringOp   = wire.AdminKeyringOp
	AdminRevokeNode  = wire.AdminRevokeNode
)

// The MeshAdmin bodies, in wire.
type (
	TokenCreateArgs = wire.TokenCreateArgs
	TokenCreated    = wire.TokenCreated
	KeyringChange   = wire.KeyringChange
	KeyringView     = wire.KeyringView
	Revoked         = wire.Revoked
)

// ErrNoTrust: the operation needs a mesh with a CA.
var ErrNoTrust = cluster.ErrNoTrust

// MeshAdmin runs one operator operation (see the Admin constants) with
// its arguments as JSON: an in-process form of the MeshAdmin service.
func (s *Service) MeshAdmin(ctx context.Context, op string, args []byte) (any, error) {
	var a cluster.AdminArgs
	var err error
	switch op {
	case AdminKeyringOp:
		err = json.Unmarshal(args, &a.Keyring)
	case AdminTokenCreate:
		err = json.Unmarshal(args, &a.Token)
	case AdminTokenRevoke, AdminRevokeNode:
		err = json.Unmarshal(args, &a.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", layout.ErrConfig, err)
	}
	return s.run(ctx, op, a)
}

// run runs one operator operation.
func (s *Service) run(ctx context.Context, op string, args cluster.AdminArgs) (any, error) {
	m := s.Mesh()
	if m == nil {
		return nil, cluster.ErrNoMesh
	}
	return m.Admin(ctx, op, args)
}

// adminService adapts MeshAdmin to the node: each method reads its
// request into the operation's arguments, runs it, and writes the answer.
type adminService struct {
	s *Service
}

// Admin is the MeshAdmin service on the local socket.
func (s *Service) Admin() api.MeshAdminServer { return &adminService{s: s} }

// adminStatus is an admin operation's refusal: bad arguments
// InvalidArgument, trust PermissionDenied, the rest FailedPrecondition.
func adminStatus(err error) error {
	code := codes.FailedPrecondition
	switch {
	case errors.Is(err, layout.ErrConfig):
		code = codes.InvalidArgument
	case errors.Is(err, meshtrust.ErrTrust), errors.Is(err, meshtrust.ErrNotServer), errors.Is(err, ErrNoTrust):
		code = codes.PermissionDenied
	}
	return status.Error(code, err.Error())
}

// adminRun runs op and asserts its answer's type.
func adminRun[T any](ctx context.Context, s *adminService, op string, args cluster.AdminArgs) (T, error) {
	var zero T
	out, err := s.s.run(ctx, op, args)
	if err != nil {
		return zero, adminStatus(err)
	}
	v, ok := out.(T)
	if !ok {
		return zero, status.Error(codes.Internal, fmt.Sprintf("admin %s: answer of type %T", op, out))
	}
	return v, nil
}

func (s *adminService) TokenCreate(ctx context.Context, req *api.TokenCreateRequest) (*api.TokenCreated, error) {
	a := TokenCreateArgs{Server: req.Server, TTL: time.Duration(req.TtlMs) * time.Millisecond, Uses: int(req.Uses)}
	t, err := adminRun[TokenCreated](ctx, s, AdminTokenCreate, cluster.AdminArgs{Token: a})
	if err != nil {
		return nil, err
	}
	return TokenCreatedToAPI(t), nil
}

func (s *adminService) TokenList(ctx context.Context, _ *api.AdminEmpty) (*api.TokenListResponse, error) {
	recs, err := adminRun[[]trust.TokenRecord](ctx, s, AdminTokenList, cluster.AdminArgs{})
	if err != nil {
		return nil, err
	}
	return &api.TokenListResponse{Tokens: TokenRecordsToAPI(recs)}, nil
}

func (s *adminService) TokenRevoke(ctx context.Context, req *api.TokenRevokeRequest) (*api.AdminEmpty, error) {
	if _, err := adminRun[string](ctx, s, AdminTokenRevoke, cluster.AdminArgs{Name: req.Id}); err != nil {
		return nil, err
	}
	return &api.AdminEmpty{}, nil
}

func (s *adminService) KeyringList(ctx context.Context, _ *api.AdminEmpty) (*api.KeyringView, error) {
	v, err := adminRun[KeyringView](ctx, s, AdminKeyringList, cluster.AdminArgs{})
	if err != nil {
		return nil, err
	}
	return KeyringToAPI(v), nil
}

func (s *adminService) KeyringChange(ctx context.Context, req *api.KeyringChangeRequest) (*api.KeyringView, error) {
	v, err := adminRun[KeyringView](ctx, s, AdminKeyringOp, cluster.AdminArgs{Keyring: KeyringChange{Op: req.Op, Key: req.Key}})
	if err != nil {
		return nil, err
	}
	return KeyringToAPI(v), nil
}

func (s *adminService) RevokeNode(ctx context.Context, req *api.RevokeNodeRequest) (*api.Revoked, error) {
	v, err := adminRun[Revoked](ctx, s, AdminRevokeNode, cluster.AdminArgs{Name: req.Node})
	if err != nil {
		return nil, err
	}
	return RevokedToAPI(v), nil
}

func (s *adminService) CARotate(ctx context.Context, _ *api.AdminEmpty) (*api.CAStatusResponse, error) {
	return s.ca(ctx, AdminCARotate)
}

func (s *adminService) CAFinish(ctx context.Context, _ *api.AdminEmpty) (*api.CAStatusResponse, error) {
	return s.ca(ctx, AdminCAFinish)
}

func (s *adminService) CAStatus(ctx context.Context, _ *api.AdminEmpty) (*api.CAStatusResponse, error) {
	return s.ca(ctx, AdminCAStatus)
}

func (s *adminService) ca(ctx context.Context, op string) (*api.CAStatusResponse, error) {
	v, err := adminRun[CAStatus](ctx, s, op, cluster.AdminArgs{})
	if err != nil {
		return nil, err
	}
	return CAStatusToAPI(v), nil
}

// CAStatusToAPI is the CA's state on the wire.
func CAStatusToAPI(v CAStatus) *api.CAStatusResponse {
	return &api.CAStatusResponse{Roots: v.Roots, Rotating: v.Rotating, OnCurrent: v.OnCurrent, MembersOnCurrent: v.Members}
}

// TokenCreatedToAPI is a new token on the wire.
func TokenCreatedToAPI(t TokenCreated) *api.TokenCreated {
	return &api.TokenCreated{JoinToken: t.Token, Id: t.ID, Role: t.Role, Expires: api.NewTime(t.Expires), Uses: int32(t.Uses),
		JoinAddr: t.JoinAddr, JoinRpc: t.JoinRPC}
}

// TokenCreatedFromAPI is wire.TokenCreatedFromAPI.
func TokenCreatedFromAPI(t *api.TokenCreated) TokenCreated { return wire.TokenCreatedFromAPI(t) }

// TokenRecordsToAPI are the registry's token records on the wire.
func TokenRecordsToAPI(recs []trust.TokenRecord) []*api.TokenRecord {
	var out []*api.TokenRecord
	for _, r := range recs {
		out = append(out, &api.TokenRecord{Id: r.ID, SecretSha256: r.SecretHash, Role: string(r.Role),
			Created: api.NewTime(r.Created), Expires: api.NewTime(r.Expires), Uses: int32(r.Uses), Used: int32(r.Used)})
	}
	return out
}

// TokenRecordsFromAPI reads token records from the wire.
func TokenRecordsFromAPI(recs []*api.TokenRecord) []trust.TokenRecord {
	var out []trust.TokenRecord
	for _, r := range recs {
		out = append(out, trust.TokenRecord{ID: r.GetId(), SecretHash: r.GetSecretSha256(), Role: trust.Role(r.GetRole()),
			Created: r.GetCreated().AsTime(), Expires: r.GetExpires().AsTime(), Uses: int(r.GetUses()), Used: int(r.GetUsed())})
	}
	return out
}

// KeyringToAPI is the keyring's view on the wire.
func KeyringToAPI(v KeyringView) *api.KeyringView {
	return &api.KeyringView{Primary: v.Primary, Keys: v.Keys, NodePrimary: v.NodePrimary, NodeKeys: v.NodeKeys}
}

// KeyringFromAPI is wire.KeyringFromAPI.
func KeyringFromAPI(v *api.KeyringView) KeyringView { return wire.KeyringFromAPI(v) }

// RevokedToAPI is what a node's revocation revoked, on the wire.
func RevokedToAPI(v Revoked) *api.Revoked { return &api.Revoked{Node: v.Node, Serials: v.Serials} }

// RevokedFromAPI is wire.RevokedFromAPI.
func RevokedFromAPI(v *api.Revoked) Revoked { return wire.RevokedFromAPI(v) }

// CAStatusFromAPI is wire.CAStatusFromAPI.
func CAStatusFromAPI(v *api.CAStatusResponse) CAStatus { return wire.CAStatusFromAPI(v) }
