package trustadmin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/apigrpc"
	"github.com/harn-dev/harn/node/dirtrust"
	"github.com/harn-dev/harn/node/operator"
	"github.com/harn-dev/harn/node/tasks"
	"github.com/harn-dev/harn/util/safefs"
	"github.com/harn-dev/harn/util/text"
)

// Directory trust (node/dirtrust): the node's trusted project directories,
// what a harn session's open asks, and the `harn trust` op on the local
// socket. The node also denies every read of its data dir to the project
// and instruction files it reads (util/safefs).

// maxTrustDir bounds a directory named to the trust op.
const maxTrustDir = 4096

// Open opens the record of trusted directories and denies the data
// dir to every safe read of this process while the node is open.
func (s *Service) Open() error {
	d, err := dirtrust.New(dirtrust.DefaultConfig(s.DataDir))
	if err != nil {
		return err
	}
	if err := d.Open(); err != nil {
		return err
	}
	s.dirs = d
	s.undeny = safefs.Deny(s.DataDir)
	return nil
}

// Close undoes Open.
func (s *Service) Close() {
	if s.dirs != nil {
		s.dirs.Close()
	}
	if s.undeny != nil {
		s.undeny()
	}
}

// projectTrust is the node's directory trust as its task host asks it.
type projectTrust struct{ s *Service }

// ProjectTrust is what the task runtimes ask of the trusted directories.
func (s *Service) ProjectTrust() tasks.ProjectTrust { return projectTrust{s} }

var _ tasks.ProjectTrust = projectTrust{}

// Project answers a harn session's open: the trusted snapshot of dir's
// .harn files, or none and the line that says what did not load.
func (p projectTrust) Project(dir string) (tasks.ProjectFiles, string, error) {
	s := p.s.dirs
	if s == nil {
		return nil, "", nil
	}
	v, err := s.Check(dir)
	if errors.Is(err, safefs.ErrDenied) {
		return nil, "", fmt.Errorf("it is the node's data dir or inside it; run harn in a project directory")
	}
	if err != nil {
		return nil, "", err
	}
	if !v.Trusted || v.Files == nil {
		return nil, v.Notice(p.s.Node), nil
	}
	return v.Files, "", nil
}

// DirTrust is `harn trust`: check, add, remove or list the trusted
// project directories.
func (t *TrustLocal) DirTrust(ctx context.Context, req *api.DirTrustRequest) (*api.DirTrustResponse, error) {
	s := t.Service
	if !operator.Owner(ctx, os.Geteuid()) { // this node's own user, on its local socket
		return nil, status.Error(codes.PermissionDenied, "trust: only this node's own user, on its local socket, may trust a directory")
	}
	if s.dirs == nil {
		return nil, status.Error(codes.Unavailable, "trust: the node is not open")
	}
	dir := req.GetDir()
	if req.GetOp() != "list" && (dir == "" || len(dir) > maxTrustDir || strings.ContainsRune(dir, 0)) {
		return nil, status.Error(codes.InvalidArgument, "trust: name the directory (an absolute path)")
	}
	switch req.GetOp() {
	case "list":
		out := &api.DirTrustResponse{}
		for _, e := range s.dirs.List() {
			out.Dirs = append(out.Dirs, trustedDirToAPI(e))
		}
		return out, nil
	case "check":
		v, err := s.dirs.Check(dir)
		if err != nil {
			return nil, dirTrustStatus(err)
		}
		return &api.DirTrustResponse{Check: checkToAPI(v)}, nil
	case "add":
		e, v, err := s.dirs.Add(dir, dirtrust.AddOptions{AllowOtherOwner: req.GetAllowOtherOwner(), Digest: req.GetDigest(),
			By: operator.By(ctx, s.Node, "")})
		if err != nil {
			return nil, dirTrustStatus(err)
		}
		s.Log.Info("directory trusted", "dir", e.Dir, "digest", e.Digest, "by", e.By, "other_owner", e.OtherOwner)
		return &api.DirTrustResponse{Dirs: []*api.TrustedDir{trustedDirToAPI(e)}, Check: checkToAPI(v)}, nil
	case "remove":
		ok, err := s.dirs.Remove(dir)
		if err != nil {
			return nil, dirTrustStatus(err)
		}
		if ok {
			s.Log.Info("directory no longer trusted", "dir", dir)
		}
		return &api.DirTrustResponse{Removed: ok}, nil
	}
	return nil, status.Error(codes.InvalidArgument, fmt.Sprintf("trust: op %q; use check, add, remove or list", text.Clip(text.OneLine(req.GetOp()), 32)))
}

// dirTrustStatus maps the room's refusals: FailedPrecondition for a rule
// (another owner, changed files, unreadable, full), InvalidArgument for a
// directory that cannot be read, ResourceExhausted for a full disk.
func dirTrustStatus(err error) error {
	switch {
	case errors.Is(err, dirtrust.ErrOtherOwner), errors.Is(err, dirtrust.ErrChanged), errors.Is(err, dirtrust.ErrUnreadable),
		errors.Is(err, dirtrust.ErrFull):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, syscall.ENOSPC):
		// The record is unchanged and checks still answer; the CLI says
		// so as for the ledger (exit 17).
		return apigrpc.WithReason(codes.ResourceExhausted, api.ReasonLedgerUnwritable, err.Error())
	case errors.Is(err, safefs.ErrDenied):
		return status.Error(codes.InvalidArgument, "trust: the node's data dir is never trusted")
	case errors.Is(err, os.ErrNotExist), errors.Is(err, dirtrust.ErrNotDir):
		return status.Error(codes.InvalidArgument, "trust: "+err.Error()+"; name an existing directory")
	}
	return status.Error(codes.Internal, err.Error())
}

func trustedDirToAPI(e dirtrust.Entry) *api.TrustedDir {
	return &api.TrustedDir{Dir: e.Dir, Digest: e.Digest, AddedAt: api.NewTime(e.AddedAt), By: e.By, OtherOwner: e.OtherOwner}
}

func checkToAPI(v dirtrust.Verdict) *api.DirTrustCheck {
	c := &api.DirTrustCheck{Dir: v.Dir, Trusted: v.Trusted, Empty: v.Empty(), Digest: v.Digest, Why: v.Why, Owner: v.Owner,
		ServersError: text.OneLine(v.ServersErr), Skills: v.Skills, Agents: v.Agents, Hooks: v.Hooks, Unreadable: v.Unreadable,
		Command: v.TrustCommand()}
	for _, srv := range v.Servers {
		c.Servers = append(c.Servers, &api.DirTrustServer{Name: srv.Name, Command: text.Clip(srv.CommandLine(), 2048)})
	}
	return c
}

// Dirs is the record of trusted directories (tests); nil until Open.
func (s *Service) Dirs() *dirtrust.Store { return s.dirs }
