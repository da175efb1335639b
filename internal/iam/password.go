package iam

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"
)

// Console passwords. A user signs in to the web console with its name and
// a password the administrator sets (SetPassword); root signs in with its
// access key ID and secret key. Passwords are stored only as argon2id
// hashes (RFC 9106) in a PHC-like string that carries the parameters it
// was made with, so that changing the parameters later leaves existing
// hashes verifiable:
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt, base64>$<hash, base64>
//
// A password is never logged, returned or stored in the clear.

// ErrSignIn is returned by SignIn for a wrong name or password, an unknown
// or disabled user, or a user without a console password: the caller
// learns nothing more.
var ErrSignIn = errors.New("iam: wrong user name or password")

// PasswordParams are the argon2id parameters of new password hashes.
type PasswordParams struct {
	// Memory is the memory cost in KiB.
	Memory uint32
	// Time is the number of passes over the memory.
	Time uint32
	// Threads is the degree of parallelism.
	Threads uint8
}

// DefaultPasswordParams are OWASP's recommended minimum for argon2id
// (m=19 MiB, t=2, p=1): about 20–50 ms and 19 MiB per hash on a server
// core. See
// https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html#argon2id
var DefaultPasswordParams = PasswordParams{Memory: 19 << 10, Time: 2, Threads: 1}

// Bounds on argon2id parameters, for the configuration and for stored
// hashes (which this server wrote, but a corrupt one must not make a
// sign-in allocate without bound).
const (
	MinPasswordMemory = 1 << 10 // KiB: 1 MiB
	MaxPasswordMemory = 1 << 20 // KiB: 1 GiB
	MaxPasswordTime   = 100
)

// Password lengths: NIST SP 800-63B asks for at least 8 characters and
// room for at least 64.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 1024 // bytes
)

const (
	saltLen   = 16
	hashLen   = 32
	phcPrefix = "$argon2id$v=19$"
)

// enc encodes salts and sums as the PHC string format does: standard
// base64 without padding.
var enc = base64.RawStdEncoding

// Validate reports whether p is usable.
func (p PasswordParams) Validate() error {
	switch {
	case p.Memory < MinPasswordMemory || p.Memory > MaxPasswordMemory:
		return fmt.Errorf("argon2id memory %d KiB is out of range: want %d to %d KiB", p.Memory, MinPasswordMemory, MaxPasswordMemory)
	case p.Time < 1 || p.Time > MaxPasswordTime:
		return fmt.Errorf("argon2id time %d is out of range: want 1 to %d", p.Time, MaxPasswordTime)
	case p.Threads < 1:
		return errors.New("argon2id threads must be at least 1")
	case p.Memory < 8*uint32(p.Threads):
		return fmt.Errorf("argon2id memory must be at least 8 KiB per thread")
	}
	return nil
}

// hashPassword returns the PHC string of password under p with a fresh
// random salt.
func hashPassword(p PasswordParams, password string) string {
	salt := make([]byte, saltLen)
	_, _ = randRead(salt)
	sum := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, hashLen)
	return fmt.Sprintf("%sm=%d,t=%d,p=%d$%s$%s", phcPrefix, p.Memory, p.Time, p.Threads, enc.EncodeToString(salt), enc.EncodeToString(sum))
}

// parsePHC splits a stored hash into its parameters, salt and sum.
func parsePHC(s string) (p PasswordParams, salt, sum []byte, err error) {
	rest, ok := strings.CutPrefix(s, phcPrefix)
	parts := strings.Split(rest, "$")
	if !ok || len(parts) != 3 {
		return p, nil, nil, errors.New("iam: stored password hash is malformed")
	}
	for _, kv := range strings.Split(parts[0], ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return p, nil, nil, errors.New("iam: stored password hash has a malformed parameter")
		}
		switch k {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				n = 0
			}
			p.Threads = uint8(n)
		}
	}
	if err := p.Validate(); err != nil {
		return p, nil, nil, fmt.Errorf("iam: stored password hash: %w", err)
	}
	if salt, err = enc.DecodeString(parts[1]); err != nil || len(salt) < 8 {
		return p, nil, nil, errors.New("iam: stored password hash has a malformed salt")
	}
	if sum, err = enc.DecodeString(parts[2]); err != nil || len(sum) < 16 || len(sum) > 64 {
		return p, nil, nil, errors.New("iam: stored password hash has a malformed sum")
	}
	return p, salt, sum, nil
}

// hashIsCurrent reports whether the stored hash was made as hashPassword
// makes one with p: a hash made with other parameters (before
// console.argon2.* changed) or of another shape is upgraded at the next
// sign-in, and costs what a current one does until then (SignIn).
func hashIsCurrent(stored string, p PasswordParams) bool {
	sp, salt, sum, err := parsePHC(stored)
	return err == nil && sp == p && len(salt) == saltLen && len(sum) == hashLen
}

// verifyPassword reports whether password matches the stored hash, in
// time independent of where they differ.
func verifyPassword(stored, password string) bool {
	p, salt, sum, err := parsePHC(stored)
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(sum)))
	return subtle.ConstantTimeCompare(got, sum) == 1
}

// checkPassword returns ErrInvalid unless password has an acceptable
// length.
func checkPassword(password string) error {
	if n := len(password); n < MinPasswordLen || n > MaxPasswordLen {
		return fmt.Errorf("%w: a password must be %d to %d bytes long", ErrInvalid, MinPasswordLen, MaxPasswordLen)
	}
	return nil
}

// SetPassword sets or replaces user name's console password. The
// password is hashed with the configured argon2id parameters (this costs
// the hash's time and memory); sessions signed in before the change end
// (SessionValid).
func (m *IAM) SetPassword(ctx context.Context, name, password string) error {
	if err := checkPassword(password); err != nil {
		return err
	}
	if _, ok := m.snap.Load().doc.Users[name]; !ok {
		return notFound("user", name) // before paying for the hash
	}
	phc := hashPassword(m.pwParams, password)
	return m.change(ctx, func(d *stateDoc) error {
		u, ok := d.Users[name]
		if !ok {
			return notFound("user", name)
		}
		u.Password = phc
		u.PasswordChanged = m.clock().UTC()
		return nil
	})
}

// SignIn checks console credentials: root's access key ID and secret key,
// or a user's name and console password. It returns the principal to act
// as, or ErrSignIn. It costs at least one argon2id hash with the current
// parameters whatever the outcome (an unknown user, root, or a user
// without a password are checked against a dummy hash), so its time does
// not tell whether the name exists.
//
// A user's hash made with other parameters (console.argon2.* raised since
// the password was set) is replaced after a successful check by one made
// with the current parameters (upgradeHash). Until then, checking it costs
// its own parameters' time, which after a raise is less than an unknown
// name's: SignIn then also checks the password against the dummy hash, on
// success by making the new hash, so that a user with an old hash answers
// no faster than an unknown name (slower by the old hash's cost, which
// lasts only until the user's next sign-in).
func (m *IAM) SignIn(ctx context.Context, name, password string) (Principal, error) {
	stored := m.dummyHash()
	root := m.isRoot(name)
	rootOK := subtle.ConstantTimeCompare([]byte(password), m.rootSK) == 1
	u, ok := m.snap.Load().doc.Users[name]
	if ok && u.Password != "" && !root {
		stored = u.Password
	}
	match := verifyPassword(stored, password)
	current := hashIsCurrent(stored, m.pwParams)
	switch {
	case root && rootOK:
		return Principal{AccessKeyID: name, Root: true, Session: true}, nil
	case root || !ok || u.Password == "" || u.Disabled || !match:
		if !current {
			verifyPassword(m.dummyHash(), password) // the cost of a current hash
		}
		return Principal{}, ErrSignIn
	}
	if !current {
		m.upgradeHash(ctx, name, stored, password)
	}
	return Principal{User: name, UserID: u.ID, Session: true}, nil
}

// errHashChanged ends upgradeHash's change without writing: the user's
// password changed (or the user went) since it was checked.
var errHashChanged = errors.New("iam: password hash changed meanwhile")

// upgradeHash replaces user name's stored hash old, which password has
// just matched, with one made with the current parameters. It saves
// through change, as SetPassword does (on a shared store, under the
// store's lock, applied to the stored state and seen by the other nodes),
// and only while the stored hash is still old, so that a password set
// meanwhile through any node is kept. PasswordChanged stays: the password
// is the same, and its sessions remain valid. A failure to save does not
// fail the sign-in, whose password was right: the old hash still
// verifies, and the upgrade is tried again at the next sign-in. It is
// logged, since until then the password keeps the weaker hash the
// operator raised console.argon2.* to replace, and a store that cannot
// save it cannot save other IAM changes either.
func (m *IAM) upgradeHash(ctx context.Context, name, old, password string) {
	phc := hashPassword(m.pwParams, password)
	err := m.change(ctx, func(d *stateDoc) error {
		u, ok := d.Users[name]
		if !ok || u.Password != old {
			return errHashChanged
		}
		u.Password = phc
		return nil
	})
	switch {
	case err == nil, errors.Is(err, errHashChanged):
		// Saved, or a password set meanwhile is kept, as it should be.
	case ctx.Err() != nil:
		// The client went away (the console's sign-in request ended).
		m.log.DebugContext(ctx, "console password hash upgrade not saved", "user", name, "err", err)
	default:
		m.log.WarnContext(ctx, "console password hash upgrade not saved; it is tried again at the user's next sign-in", "user", name, "err", err)
	}
}

// SignInName returns the principal a console sign-in name stands for:
// root for root's access key ID, or the user of that name, whether or
// not it has a password or is enabled. A name that is neither may be a
// password typed into the wrong field: the audit log of a failed
// sign-in records it only when this says it names a principal.
func (m *IAM) SignInName(name string) (Principal, bool) {
	if m.isRoot(name) {
		return Principal{AccessKeyID: name, Root: true}, true
	}
	if u, ok := m.snap.Load().doc.Users[name]; ok {
		return Principal{User: name, UserID: u.ID}, true
	}
	return Principal{}, false
}

// SessionValid reports whether a console session of p that signed in at
// start may still act: root always (its credentials change only with a
// restart, which ends every session); a user while it exists (the same
// user, not one created again under its name), is enabled, has not been
// disabled since start and its password has not changed since start.
func (m *IAM) SessionValid(p Principal, start time.Time) bool {
	if p.Root {
		return !p.Anonymous && m.isRoot(p.AccessKeyID)
	}
	u, ok := m.snap.Load().doc.Users[p.User]
	return p.Session && ok && u.ID == p.UserID && !u.Disabled && u.Password != "" &&
		!u.PasswordChanged.After(start) && !u.SessionsEnded.After(start)
}

// PasswordParams returns the argon2id parameters new hashes are made with.
func (m *IAM) PasswordParams() PasswordParams { return m.pwParams }
