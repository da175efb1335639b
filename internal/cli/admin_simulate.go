package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/coffer-s3/coffer/internal/adminapi"
	"github.com/coffer-s3/coffer/internal/iam"
	"github.com/coffer-s3/coffer/internal/policy"
)

// policySimulateCmd is `coffer admin policy simulate`.
func policySimulateCmd() adminCmd {
	return adminCmd{
		name:     "policy simulate",
		flagHint: "--user NAME | --key ACCESS_KEY --action ACTION [--resource ARN] [--context KEY=VALUE]...",
		summary:  "would a request be allowed, and why?",
		about: "Asks the server whether the user of --user (its own and its groups' policies)\n" +
			"or the access key of --key (its user's policies narrowed by the key's scope)\n" +
			"may do --action on --resource (arn:aws:s3:::BUCKET or arn:aws:s3:::BUCKET/KEY;\n" +
			"none for s3:ListAllMyBuckets and admin actions), with the condition values\n" +
			"of --context (repeatable: aws:SourceIp=10.0.0.1, aws:SecureTransport=true,\n" +
			"s3:prefix=home/, …). The answer comes from the same decision that real\n" +
			"requests get, with the statements that decided it. Bucket and object ACLs\n" +
			"are not weighed. Exit status 0 when allowed, 1 when denied (or on an error),\n" +
			"2 on a usage error.",
		setup: adminPolicySimulate,
	}
}

// contextFlag collects --context KEY=VALUE flags.
type contextFlag map[string]string

func (c contextFlag) String() string { return "" }

func (c contextFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, such as aws:SourceIp=10.0.0.1")
	}
	var probe iam.Conditions
	if err := probe.SetCondition(k, val); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), iam.ErrInvalid.Error()+": "))
	}
	c[k] = val
	return nil
}

// errDenied is the outcome of a simulation that was denied: exit status
// 1 with nothing more on standard error than the answer printed.
var errDenied = &exitStatus{code: exitError}

func adminPolicySimulate(fs *flag.FlagSet) adminRun {
	user := fs.String("user", "", "simulate a request by this user (its policies, no key's scope)")
	key := fs.String("key", "", "simulate a request signed with this access key (its user's policies and its scope)")
	action := fs.String("action", "", "the action, e.g. s3:GetObject (required)")
	resource := fs.String("resource", "", "the resource: arn:aws:s3:::BUCKET or arn:aws:s3:::BUCKET/KEY")
	cond := contextFlag{}
	fs.Var(cond, "context", "a condition value KEY=VALUE (repeatable): "+strings.Join(iam.ConditionKeys, ", "))
	return func(ctx context.Context, s *adminSession, _ []string) error {
		switch {
		case (*user == "") == (*key == ""):
			return usagef("give exactly one of --user NAME and --key ACCESS_KEY")
		case *action == "":
			return usagef("give --action, such as s3:GetObject")
		case !policy.KnownAction(*action):
			return usagef("--action: unknown action %q (want one such as s3:GetObject or admin:ListUsers)", *action)
		}
		if _, _, err := iam.ParseResource(*resource); err != nil {
			return usagef("--resource: %s", strings.TrimPrefix(err.Error(), iam.ErrInvalid.Error()+": "))
		}
		c, err := s.client()
		if err != nil {
			return err
		}
		sim, err := c.Simulate(ctx, adminapi.SimulateRequest{User: *user, AccessKey: *key, Action: *action, Resource: *resource, Context: cond})
		if err != nil {
			return err
		}
		if s.g.json {
			err = s.printJSON(sim)
		} else {
			err = s.printSimulation(sim)
		}
		if err == nil && !sim.Allowed {
			return errDenied
		}
		return err
	}
}

// printSimulation prints the verdict, the reason and every policy weighed.
func (s *adminSession) printSimulation(sim adminapi.Simulation) error {
	verdict := "ALLOWED"
	if !sim.Allowed {
		verdict = "DENIED"
	}
	res := sim.Resource
	if res == "" {
		res = "(no resource)"
	}
	s.printf("%s: %s %s on %s\n%s\n", verdict, sim.Principal, sim.Action, res, sim.Message)
	if len(sim.Evaluated) == 0 {
		return nil
	}
	s.printf("\nPolicies weighed, in order:\n")
	tw := s.table()
	for _, e := range sim.Evaluated {
		st := e.StatementName()
		if st == "" {
			st = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Source, e.Decision, st)
	}
	return tw.Flush()
}
