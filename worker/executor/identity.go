package executor

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// identity is who a subprocess runs as.
type identity struct {
	cred *syscall.Credential
	env  []string // HOME, USER, LOGNAME of the user; empty when only a group is set
}

// credential returns the credential to start a process with: nil (the
// worker's own) for a nil identity.
func (id *identity) credential() *syscall.Credential {
	if id == nil {
		return nil
	}
	return id.cred
}

// setsEnv reports whether the identity sets the variable k.
func (id *identity) setsEnv(k string) bool {
	for _, kv := range id.env {
		if strings.HasPrefix(kv, k) && len(kv) > len(k) && kv[len(k)] == '=' {
			return true
		}
	}
	return false
}

// identities resolves user and group names to credentials and remembers
// the answers: a lookup reads /etc/passwd and /etc/group, which is too slow
// to do for every task. Failed lookups are not remembered, so a user created
// after a failure is found on the next task.
type identities struct {
	mu    sync.Mutex
	known map[[2]string]*identity
}

// lookup returns the identity for userName and groupName, nil when both are
// empty. With only a group, the process keeps the worker's user and
// supplementary groups. With a user, it gets the user's primary group
// (unless groupName says otherwise), supplementary groups, HOME, USER and
// LOGNAME. Numeric ids unknown to the system are used as they are.
func (c *identities) lookup(userName, groupName string) (*identity, error) {
	if userName == "" && groupName == "" {
		return nil, nil
	}
	key := [2]string{userName, groupName}
	c.mu.Lock()
	id, ok := c.known[key]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := resolveIdentity(userName, groupName)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.known == nil {
		c.known = make(map[[2]string]*identity)
	}
	c.known[key] = id
	c.mu.Unlock()
	return id, nil
}

// resolveIdentity looks userName and groupName up in the system's databases.
func resolveIdentity(userName, groupName string) (*identity, error) {
	cred := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), NoSetGroups: true}
	id := &identity{cred: cred}
	if userName != "" {
		u, err := lookupUser(userName)
		if err != nil {
			return nil, err
		}
		uid, err := parseID(u.Uid)
		if err != nil {
			return nil, fmt.Errorf("user %q: uid %q: %w", userName, u.Uid, err)
		}
		gid, err := parseID(u.Gid)
		if err != nil {
			return nil, fmt.Errorf("user %q: gid %q: %w", userName, u.Gid, err)
		}
		cred.Uid, cred.Gid, cred.NoSetGroups = uid, gid, false
		cred.Groups = []uint32{} // never inherit the worker's supplementary groups
		if u.Username != "" {
			if gids, err := u.GroupIds(); err == nil {
				for _, g := range gids {
					if n, err := parseID(g); err == nil {
						cred.Groups = append(cred.Groups, n)
					}
				}
			}
			home := u.HomeDir
			if home == "" {
				home = "/"
			}
			id.env = []string{"HOME=" + home, "USER=" + u.Username, "LOGNAME=" + u.Username}
		}
	}
	if groupName != "" {
		gid, err := lookupGroup(groupName)
		if err != nil {
			return nil, err
		}
		cred.Gid = gid
	}
	return id, nil
}

// lookupUser finds a user by name or numeric id. A numeric id the system
// does not know is returned as a user with that uid and gid and no name.
func lookupUser(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err == nil {
		return u, nil
	}
	if _, perr := parseID(name); perr != nil {
		return nil, fmt.Errorf("look up user %q: %w", name, err)
	}
	u, err = user.LookupId(name)
	if err == nil {
		return u, nil
	}
	var unknown user.UnknownUserIdError
	if errors.As(err, &unknown) {
		return &user.User{Uid: name, Gid: name}, nil
	}
	return nil, fmt.Errorf("look up user id %s: %w", name, err)
}

// lookupGroup finds a group id by name or numeric id.
func lookupGroup(name string) (uint32, error) {
	g, err := user.LookupGroup(name)
	if err == nil {
		gid, perr := parseID(g.Gid)
		if perr != nil {
			return 0, fmt.Errorf("group %q: gid %q: %w", name, g.Gid, perr)
		}
		return gid, nil
	}
	if gid, perr := parseID(name); perr == nil {
		return gid, nil
	}
	return 0, fmt.Errorf("look up group %q: %w", name, err)
}

// parseID parses a numeric user or group id.
func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err
}
