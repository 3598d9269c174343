package claimwire

import (
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// RepoIdentity is a repository's identity for claims: its normalised
// origin URL, or, without one, the absolute path of its top level. Two
// clones of one repository (over https or ssh) share it.
func RepoIdentity(origin, top string) string {
	if id := NormalizeURL(origin); id != "" {
		return id
	}
	if top == "" {
		return ""
	}
	return filepath.Clean(top)
}

// NormalizeURL turns a remote URL into host/owner/name: the scheme, the
// user, a port and a trailing .git or slash are dropped and the host is
// lowercased, so that git@host:owner/repo.git, ssh://git@Host:22/owner/repo
// and https://host/owner/repo are one identity. A local path or file://
// URL is its cleaned path. "" stays "".
func NormalizeURL(u string) string {
	// Normalise to a fixed point, so that an identity normalises to
	// itself (bounded: each pass only drops characters).
	for range 8 {
		v := normalizeOnce(u)
		if v == u {
			break
		}
		u = v
	}
	return u
}

func normalizeOnce(u string) string {
	u = strings.TrimSpace(u)
	if u == "" {
		return ""
	}
	var host, p string
	switch {
	case strings.Contains(u, "://"):
		pu, err := url.Parse(u)
		if err != nil {
			return strings.TrimSuffix(strings.TrimRight(u, "/"), ".git")
		}
		if pu.Scheme == "file" {
			return cleanRepoPath(pu.Path)
		}
		host, p = pu.Hostname(), pu.Path
	case isSCP(u):
		rest := u
		if i := strings.IndexByte(rest, '@'); i >= 0 && i < strings.IndexByte(rest, ':') {
			rest = rest[i+1:]
		}
		host, p, _ = strings.Cut(rest, ":")
	default:
		return cleanRepoPath(u)
	}
	p = strings.Trim(path.Clean("/"+p), "/")
	p = strings.TrimSuffix(p, ".git")
	host = strings.ToLower(host)
	if p == "" {
		return host
	}
	return host + "/" + p
}

// isSCP reports the scp-like form [user@]host:path (a colon before any
// slash, and not a Windows drive letter).
func isSCP(u string) bool {
	colon := strings.IndexByte(u, ':')
	if colon <= 1 {
		return false
	}
	slash := strings.IndexByte(u, '/')
	return slash < 0 || colon < slash
}

func cleanRepoPath(p string) string {
	for {
		q := strings.TrimSpace(strings.TrimSuffix(strings.TrimRight(filepath.Clean(p), "/"), ".git"))
		if q == p {
			return q
		}
		p = q
	}
}
