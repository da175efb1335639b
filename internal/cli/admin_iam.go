package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/iam"
)

// adminIAMCommands are the commands on users, keys, groups and policies.
func adminIAMCommands() []adminCmd {
	return []adminCmd{
		{name: "user add", args: "NAME", min: 1, max: 1, summary: "create a user with one access key",
			about: "Creates user NAME with one access key and prints the key and its secret.\nThe secret is shown only this once.",
			setup: noFlags(adminUserAdd)},
		{name: "user ls", summary: "list users", about: "Lists the users with their status, groups and policies.",
			setup: noFlags(adminUserList)},
		{name: "user show", args: "NAME", min: 1, max: 1, summary: "describe a user", about: "Describes user NAME.",
			setup: noFlags(adminUserShow)},
		{name: "user rm", args: "NAME", min: 1, max: 1, summary: "delete a user and its access keys",
			about: "Deletes user NAME, its access keys and its group memberships.",
			setup: noFlags(adminUserRm)},
		{name: "user disable", args: "NAME", min: 1, max: 1, summary: "disable a user: its keys stop working",
			about: "Disables user NAME: requests signed with its keys are refused until it is enabled.",
			setup: noFlags(adminUserSetDisabled(true))},
		{name: "user enable", args: "NAME", min: 1, max: 1, summary: "enable a disabled user",
			about: "Enables user NAME again.", setup: noFlags(adminUserSetDisabled(false))},
		{name: "user passwd", args: "NAME", flagHint: "--password-stdin", min: 1, max: 1, summary: "set a user's web console password",
			about: "Sets or changes the password user NAME signs in to the web console with,\nread from standard input (one line; a final newline is dropped), so that it\nshows in no process list or shell history. 8 to 1024 bytes. The user's\nconsole sessions from before the change end.",
			setup: adminUserPasswd},

		{name: "key add", flagHint: "--user NAME", summary: "create an access key for a user",
			about: "Creates an access key for the user named by --user and prints it with its\nsecret, which is shown only this once. --policy scopes the key: a request\nmust be allowed by the key's policy as well as by the user's.",
			setup: adminKeyAdd},
		{name: "key ls", summary: "list access keys", about: "Lists the access keys of every user, or of the user named by --user.",
			setup: adminKeyList},
		{name: "key show", args: "ACCESS_KEY", min: 1, max: 1, summary: "describe an access key",
			about: "Describes an access key (never its secret).", setup: noFlags(adminKeyShow)},
		{name: "key rm", args: "ACCESS_KEY", min: 1, max: 1, summary: "delete an access key",
			about: "Deletes an access key.", setup: noFlags(adminKeyRm)},
		{name: "key disable", args: "ACCESS_KEY", min: 1, max: 1, summary: "disable an access key",
			about: "Disables an access key: requests signed with it are refused until it is enabled.",
			setup: noFlags(adminKeySetDisabled(true))},
		{name: "key enable", args: "ACCESS_KEY", min: 1, max: 1, summary: "enable a disabled access key",
			about: "Enables an access key again.", setup: noFlags(adminKeySetDisabled(false))},
		{name: "key rotate", args: "ACCESS_KEY", min: 1, max: 1, summary: "replace an access key by a new one",
			about: "Replaces an access key by a new one with the same user, scope, description\nand expiry, and prints the new key with its secret. The old key stops\nworking at once.",
			setup: noFlags(adminKeyRotate)},

		{name: "group add", args: "NAME", min: 1, max: 1, summary: "create a group", about: "Creates an empty group.",
			setup: noFlags(adminGroupAdd)},
		{name: "group ls", summary: "list groups", about: "Lists the groups with their members and policies.",
			setup: noFlags(adminGroupList)},
		{name: "group show", args: "NAME", min: 1, max: 1, summary: "describe a group", about: "Describes group NAME.",
			setup: noFlags(adminGroupShow)},
		{name: "group rm", args: "NAME", min: 1, max: 1, summary: "delete a group",
			about: "Deletes group NAME; its members lose the group's policies.", setup: noFlags(adminGroupRm)},
		{name: "group members", args: "GROUP", flagHint: "--add U1,U2 --remove U3", min: 1, max: 1,
			summary: "add and remove members of a group",
			about:   "Adds the users of --add to GROUP and removes those of --remove, together.",
			setup:   adminGroupMembers},

		{name: "policy add", args: "NAME FILE", min: 2, max: 2, summary: "create or replace a policy from a JSON file",
			about: "Creates or replaces the named identity policy with the JSON policy document\nin FILE (\"-\" reads standard input). The built-in policies readonly,\nreadwrite, writeonly and admin need no adding and cannot be replaced.",
			setup: noFlags(adminPolicyAdd)},
		{name: "policy ls", summary: "list policies", about: "Lists the policies, built-in ones included, with what they are attached to.",
			setup: noFlags(adminPolicyList)},
		{name: "policy show", args: "NAME", min: 1, max: 1, summary: "print a policy document",
			about: "Prints the document of the named policy; with --json, the policy's description.",
			setup: noFlags(adminPolicyShow)},
		{name: "policy rm", args: "NAME", min: 1, max: 1, summary: "delete a policy",
			about: "Deletes the named policy. It must be detached from every user and group first.",
			setup: noFlags(adminPolicyRm)},
		{name: "policy attach", args: "POLICY", flagHint: "--user NAME | --group NAME", min: 1, max: 1,
			summary: "attach a policy to a user or group",
			about:   "Attaches the named policy to the user of --user or the group of --group.",
			setup:   adminPolicyAttach(true)},
		{name: "policy detach", args: "POLICY", flagHint: "--user NAME | --group NAME", min: 1, max: 1,
			summary: "detach a policy from a user or group",
			about:   "Detaches the named policy from the user of --user or the group of --group.",
			setup:   adminPolicyAttach(false)},
		policySimulateCmd(),
	}
}

// noFlags is the setup of a command without flags of its own.
func noFlags(run adminRun) func(*flag.FlagSet) adminRun {
	return func(*flag.FlagSet) adminRun { return run }
}

// printNewKey prints a key with its secret.
func (s *adminSession) printNewKey(user, ak, sk string, expires *time.Time) error {
	tw := s.table()
	fmt.Fprintf(tw, "User:\t%s\n", user)
	fmt.Fprintf(tw, "Access key ID:\t%s\n", ak)
	fmt.Fprintf(tw, "Secret access key:\t%s\n", sk)
	if expires != nil {
		fmt.Fprintf(tw, "Expires:\t%s\n", timestamp(*expires))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s.note("Save the secret access key now: it cannot be shown again.")
	return nil
}

func adminUserAdd(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	u, err := c.CreateUser(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(u)
	}
	return s.printNewKey(u.User, u.AccessKey, u.SecretKey, nil)
}

func userStatus(disabled bool) string {
	if disabled {
		return "disabled"
	}
	return "active"
}

func adminUserList(ctx context.Context, s *adminSession, _ []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	us, err := c.Users(ctx)
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(adminapi.UserList{Users: us})
	}
	tw := s.table()
	fmt.Fprintln(tw, "NAME\tSTATUS\tGROUPS\tPOLICIES\tCREATED")
	for _, u := range us {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Name, userStatus(u.Disabled), list(u.Groups), list(u.Policies), timestamp(u.Created))
	}
	return tw.Flush()
}

func adminUserShow(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	u, err := c.User(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(u)
	}
	tw := s.table()
	fmt.Fprintf(tw, "Name:\t%s\n", u.Name)
	fmt.Fprintf(tw, "Status:\t%s\n", userStatus(u.Disabled))
	fmt.Fprintf(tw, "Groups:\t%s\n", list(u.Groups))
	fmt.Fprintf(tw, "Policies:\t%s\n", list(u.Policies))
	fmt.Fprintf(tw, "Console password:\t%s\n", map[bool]string{true: "set", false: "none"}[u.Password])
	fmt.Fprintf(tw, "Created:\t%s\n", timestamp(u.Created))
	fmt.Fprintf(tw, "Canonical ID:\t%s\n", u.CanonicalID)
	return tw.Flush()
}

// adminUserPasswd sets a user's console password from standard input.
func adminUserPasswd(fs *flag.FlagSet) adminRun {
	fromStdin := fs.Bool("password-stdin", false, "read the password from standard input (required)")
	return func(ctx context.Context, s *adminSession, args []string) error {
		if !*fromStdin {
			return usagef("give --password-stdin and the password on standard input: a password on the command line would show in process lists")
		}
		pw, err := readPassword(s.stdin)
		if err != nil {
			return err
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		if err := c.SetPassword(ctx, args[0], pw); err != nil {
			return err
		}
		return s.done("Set the console password of user %s.", args[0])
	}
}

// readPassword reads a password from r: its one line, without the final
// newline (LF or CRLF).
func readPassword(r io.Reader) (string, error) {
	data, err := io.ReadAll(io.LimitReader(r, iam.MaxPasswordLen+3))
	if err != nil {
		return "", usagef("cannot read the password from standard input: %v", err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	switch {
	case pw == "":
		return "", usagef("no password on standard input")
	case strings.ContainsAny(pw, "\r\n"):
		return "", usagef("the password on standard input must be one line")
	case len(pw) > iam.MaxPasswordLen:
		return "", usagef("the password is longer than %d bytes", iam.MaxPasswordLen)
	}
	return pw, nil
}

func adminUserRm(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DeleteUser(ctx, args[0]); err != nil {
		return err
	}
	return s.done("Deleted user %s.", args[0])
}

func adminUserSetDisabled(disabled bool) adminRun {
	return func(ctx context.Context, s *adminSession, args []string) error {
		c, err := s.client()
		if err != nil {
			return err
		}
		if disabled {
			if err := c.DisableUser(ctx, args[0]); err != nil {
				return err
			}
			return s.done("Disabled user %s.", args[0])
		}
		if err := c.EnableUser(ctx, args[0]); err != nil {
			return err
		}
		return s.done("Enabled user %s.", args[0])
	}
}

// maxPolicyFile bounds a policy file; the server takes at most 20 KiB.
const maxPolicyFile = 1 << 20

// readPolicyFile reads a JSON policy document from name, "-" being
// standard input, and checks that it is a JSON object.
func (s *adminSession) readPolicyFile(name string) ([]byte, error) {
	var (
		r    io.Reader
		what = "policy file " + name
	)
	if name == "-" {
		r, what = s.stdin, "policy on standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("cannot read policy file: %v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPolicyFile+1))
	switch {
	case err != nil:
		return nil, usagef("cannot read %s: %v", what, err)
	case len(data) > maxPolicyFile:
		return nil, usagef("%s is larger than %d bytes", what, maxPolicyFile)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			return nil, usagef("%s is not valid JSON: line %d: %v", what, line, err)
		}
		return nil, usagef("%s is not valid JSON: %v", what, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, usagef("%s must hold a JSON object (a policy document)", what)
	}
	return data, nil
}

// parseExpiry parses --expires: a duration from now (720h, 90m, or 30d for
// days) or an RFC 3339 time.
func parseExpiry(v string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil {
			if n <= 0 {
				return time.Time{}, fmt.Errorf("--expires %q must be in the future", v)
			}
			return now.AddDate(0, 0, n), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--expires %q must be in the future", v)
		}
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--expires %q: want a duration such as 720h or 30d, or a time such as 2030-01-02T15:04:05Z", v)
}

func adminKeyAdd(fs *flag.FlagSet) adminRun {
	user := fs.String("user", "", "the user the key belongs to (required)")
	policyFile := fs.String("policy", "", "JSON policy `file` scoping the key (\"-\" for standard input)")
	desc := fs.String("description", "", "a note on what the key is for")
	expires := fs.String("expires", "", "when the key stops working: a duration (720h, 30d) or an RFC 3339 time")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		if *user == "" {
			return usagef("missing --user: name the user the key is for")
		}
		in := adminapi.CreateKeyRequest{User: *user, Description: *desc}
		if *expires != "" {
			t, err := parseExpiry(*expires, time.Now())
			if err != nil {
				return usagef("%v", err)
			}
			in.Expires = &t
		}
		if *policyFile != "" {
			doc, err := s.readPolicyFile(*policyFile)
			if err != nil {
				return err
			}
			in.Policy = doc
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		k, err := c.CreateKey(ctx, in)
		if err != nil {
			return err
		}
		if s.g.json {
			return s.printJSON(k)
		}
		return s.printNewKey(k.User, k.AccessKey, k.SecretKey, k.Expires)
	}
}

// keyStatus describes whether a key works.
func keyStatus(k adminapi.KeyInfo, now time.Time) string {
	switch {
	case k.Disabled:
		return "disabled"
	case k.Expires != nil && !k.Expires.After(now):
		return "expired"
	}
	return "active"
}

func adminKeyList(fs *flag.FlagSet) adminRun {
	user := fs.String("user", "", "list only the keys of this user")
	return func(ctx context.Context, s *adminSession, _ []string) error {
		c, err := s.client()
		if err != nil {
			return err
		}
		ks, err := c.Keys(ctx, *user)
		if err != nil {
			return err
		}
		if s.g.json {
			return s.printJSON(adminapi.KeyList{Keys: ks})
		}
		now := time.Now()
		tw := s.table()
		fmt.Fprintln(tw, "ACCESS KEY\tUSER\tSTATUS\tSCOPED\tEXPIRES\tCREATED\tDESCRIPTION")
		for _, k := range ks {
			exp := "-"
			if k.Expires != nil {
				exp = timestamp(*k.Expires)
			}
			scoped := "no"
			if len(k.Policy) > 0 {
				scoped = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.AccessKey, k.User, keyStatus(k, now), scoped, exp, timestamp(k.Created), k.Description)
		}
		return tw.Flush()
	}
}

// indentJSON returns doc indented for reading, or as is if it is not JSON.
func indentJSON(doc []byte) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return doc
	}
	return b.Bytes()
}

func adminKeyShow(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	k, err := c.Key(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(k)
	}
	tw := s.table()
	fmt.Fprintf(tw, "Access key ID:\t%s\n", k.AccessKey)
	fmt.Fprintf(tw, "User:\t%s\n", k.User)
	fmt.Fprintf(tw, "Status:\t%s\n", keyStatus(k, time.Now()))
	if k.Description != "" {
		fmt.Fprintf(tw, "Description:\t%s\n", k.Description)
	}
	fmt.Fprintf(tw, "Created:\t%s\n", timestamp(k.Created))
	if k.Expires != nil {
		fmt.Fprintf(tw, "Expires:\t%s\n", timestamp(*k.Expires))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(k.Policy) > 0 {
		s.printf("Policy:\n%s\n", indentJSON(k.Policy))
	}
	return nil
}

func adminKeyRm(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DeleteKey(ctx, args[0]); err != nil {
		return err
	}
	return s.done("Deleted access key %s.", args[0])
}

func adminKeySetDisabled(disabled bool) adminRun {
	return func(ctx context.Context, s *adminSession, args []string) error {
		c, err := s.client()
		if err != nil {
			return err
		}
		if disabled {
			if err := c.DisableKey(ctx, args[0]); err != nil {
				return err
			}
			return s.done("Disabled access key %s.", args[0])
		}
		if err := c.EnableKey(ctx, args[0]); err != nil {
			return err
		}
		return s.done("Enabled access key %s.", args[0])
	}
}

func adminKeyRotate(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	k, err := c.RotateKey(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(k)
	}
	if err := s.printNewKey(k.User, k.AccessKey, k.SecretKey, k.Expires); err != nil {
		return err
	}
	s.note("Access key %s no longer works.", args[0])
	return nil
}

func adminGroupAdd(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.CreateGroup(ctx, args[0]); err != nil {
		return err
	}
	return s.done("Created group %s.", args[0])
}

func adminGroupList(ctx context.Context, s *adminSession, _ []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	gs, err := c.Groups(ctx)
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(adminapi.GroupList{Groups: gs})
	}
	tw := s.table()
	fmt.Fprintln(tw, "NAME\tMEMBERS\tPOLICIES\tCREATED")
	for _, g := range gs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Name, list(g.Members), list(g.Policies), timestamp(g.Created))
	}
	return tw.Flush()
}

func adminGroupShow(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	g, err := c.Group(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(g)
	}
	tw := s.table()
	fmt.Fprintf(tw, "Name:\t%s\n", g.Name)
	fmt.Fprintf(tw, "Members:\t%s\n", list(g.Members))
	fmt.Fprintf(tw, "Policies:\t%s\n", list(g.Policies))
	fmt.Fprintf(tw, "Created:\t%s\n", timestamp(g.Created))
	return tw.Flush()
}

func adminGroupRm(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DeleteGroup(ctx, args[0]); err != nil {
		return err
	}
	return s.done("Deleted group %s.", args[0])
}

// splitNames splits a comma-separated list of names, dropping empty ones.
func splitNames(v string) []string {
	var out []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func adminGroupMembers(fs *flag.FlagSet) adminRun {
	add := fs.String("add", "", "comma-separated users to add")
	remove := fs.String("remove", "", "comma-separated users to remove")
	return func(ctx context.Context, s *adminSession, args []string) error {
		a, r := splitNames(*add), splitNames(*remove)
		if len(a) == 0 && len(r) == 0 {
			return usagef("nothing to do: give --add and/or --remove with comma-separated user names")
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		if err := c.UpdateGroupMembers(ctx, args[0], a, r); err != nil {
			return err
		}
		var parts []string
		if len(a) > 0 {
			parts = append(parts, "added "+strings.Join(a, ", "))
		}
		if len(r) > 0 {
			parts = append(parts, "removed "+strings.Join(r, ", "))
		}
		return s.done("Group %s: %s.", args[0], strings.Join(parts, "; "))
	}
}

func adminPolicyAdd(ctx context.Context, s *adminSession, args []string) error {
	doc, err := s.readPolicyFile(args[1])
	if err != nil {
		return err
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.PutPolicy(ctx, args[0], doc); err != nil {
		return err
	}
	return s.done("Saved policy %s.", args[0])
}

func adminPolicyList(ctx context.Context, s *adminSession, _ []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	ps, err := c.Policies(ctx)
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(adminapi.PolicyList{Policies: ps})
	}
	tw := s.table()
	fmt.Fprintln(tw, "NAME\tTYPE\tUSERS\tGROUPS\tCREATED")
	for _, p := range ps {
		kind := "custom"
		if p.Canned {
			kind = "built-in"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, kind, list(p.Users), list(p.Groups), timestamp(p.Created))
	}
	return tw.Flush()
}

func adminPolicyShow(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	p, err := c.Policy(ctx, args[0])
	if err != nil {
		return err
	}
	if s.g.json {
		return s.printJSON(p)
	}
	s.printf("%s\n", indentJSON(p.Document))
	return nil
}

func adminPolicyRm(ctx context.Context, s *adminSession, args []string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if err := c.DeletePolicy(ctx, args[0]); err != nil {
		return err
	}
	return s.done("Deleted policy %s.", args[0])
}

func adminPolicyAttach(attach bool) func(*flag.FlagSet) adminRun {
	return func(fs *flag.FlagSet) adminRun {
		user := fs.String("user", "", "the user")
		group := fs.String("group", "", "the group")
		return func(ctx context.Context, s *adminSession, args []string) error {
			if (*user == "") == (*group == "") {
				return usagef("give exactly one of --user NAME and --group NAME")
			}
			t := iam.Target{User: *user, Group: *group}
			what := "user " + *user
			if *group != "" {
				what = "group " + *group
			}
			c, err := s.client()
			if err != nil {
				return err
			}
			if attach {
				if err := c.AttachPolicy(ctx, args[0], t); err != nil {
					return err
				}
				return s.done("Attached policy %s to %s.", args[0], what)
			}
			if err := c.DetachPolicy(ctx, args[0], t); err != nil {
				return err
			}
			return s.done("Detached policy %s from %s.", args[0], what)
		}
	}
}
