package config

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/coffer-s3/coffer/internal/iam"
)

// ErrHelp is returned by Load when the arguments ask for help (-h, -help).
var ErrHelp = errors.New("config: help requested")

// Load returns the settings for args (flags only; no positional arguments),
// applying, lowest to highest precedence: Default(), the TOML file named by
// -config or COFFER_CONFIG, the COFFER_… environment variables read through
// getenv, and the flags. An empty environment variable counts as unset. The
// result has passed Validate. Errors name the source of the bad value: the
// flag, the variable or the file and key.
func Load(args []string, getenv func(string) string) (Config, error) {
	// A first pass over the flags finds -config (and rejects bad flags before
	// any file is read); the flags are applied for real last.
	pre := Default()
	pfs := newFlagSet("coffer", &pre)
	if err := pfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, ErrHelp
		}
		return Config{}, err
	}
	if pfs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", pfs.Arg(0))
	}
	file := getenv(envName("config"))
	if isSet(pfs, "config") {
		file = pre.File
	}

	cfg := Default()
	fs := newFlagSet("coffer", &cfg)
	source := make(map[string]string) // flag name → where its value came from
	if file != "" {
		if err := applyFile(fs, file, source); err != nil {
			return Config{}, err
		}
		cfg.File = file
	}
	for _, s := range settings(&cfg) {
		env := envName(s.name)
		if v := getenv(env); v != "" {
			if err := fs.Set(s.name, v); err != nil {
				return Config{}, fmt.Errorf("%s: %w", env, err)
			}
			source[s.name] = env
		}
	}
	cfg.Root.RootAccessKey = getenv(EnvRootAccessKey)
	cfg.Root.RootSecretKey = getenv(EnvRootSecretKey)
	cfg.Blob.S3.SecretKey = getenv(EnvBlobS3SecretKey)
	if v := getenv(EnvMasterKey); v != "" {
		k, err := iam.ParseMasterKey(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", EnvMasterKey, err)
		}
		cfg.Root.MasterKey = k
	}
	if err := fs.Parse(args); err != nil {
		return Config{}, err // unreachable: the first pass parsed the same args
	}
	// pfs saw only the arguments (fs also counts file and environment).
	pfs.Visit(func(f *flag.Flag) { source[f.Name] = "flag --" + f.Name })
	if err := cfg.Validate(); err != nil {
		return Config{}, attribute(err, source)
	}
	if src, env := source["meta.postgres.url"], envName("meta.postgres.url"); src != "" && src != env && hasPassword(cfg.Meta.Postgres.URL) {
		return Config{}, fmt.Errorf("meta.postgres.url (from %s) holds a password: give it only through %s, meta.postgres.password-file or a .pgpass file", src, env)
	}
	return cfg, nil
}

// attribute rewrites the errors of Validate to say where each offending
// setting came from: "block-size (from COFFER_BLOCK_SIZE): …".
func attribute(err error, source map[string]string) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
		var se *settingError
		if errors.As(e, &se) && source[se.name] != "" {
			out[i] = fmt.Errorf("%s (from %s): %w", se.name, source[se.name], se.err)
		}
	}
	return errors.Join(out...)
}

func isSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// applyFile sets the flags named by the keys of the TOML file at path.
// Dotted flag names are tables: blob.kind is "kind" in table [blob] (or the
// dotted key blob.kind = …). Unknown keys are errors.
func applyFile(fs *flag.FlagSet, path string, source map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	var tree map[string]any
	md, err := toml.Decode(string(data), &tree)
	if err != nil {
		var perr toml.ParseError
		if errors.As(err, &perr) {
			return fmt.Errorf("%s:%d: %s", path, perr.Position.Line, perr.Message)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	byName := make(map[string]setting)
	tables := make(map[string]bool)
	var probe Config
	for _, s := range settings(&probe) {
		if s.noFile {
			continue
		}
		byName[s.name] = s
		parts := strings.Split(s.name, ".")
		for i := 1; i < len(parts); i++ {
			tables[strings.Join(parts[:i], ".")] = true
		}
	}
	// md.Keys lists every key in file order, tables included, so the first
	// unknown key reported is the first in the file.
	for _, k := range md.Keys() {
		name := strings.Join(k, ".")
		if md.Type(k...) == "Hash" && tables[name] {
			continue
		}
		s, ok := byName[name]
		if !ok {
			return fmt.Errorf("%s: unknown key %q", path, name)
		}
		str, err := s.value.fromTOML(lookup(tree, k))
		if err == nil {
			err = fs.Set(name, str)
		}
		if err != nil {
			return fmt.Errorf("%s: %s: %w", path, name, err)
		}
		source[name] = path
	}
	return nil
}

// lookup returns the value at key in a decoded TOML tree.
func lookup(tree map[string]any, key toml.Key) any {
	var v any = tree
	for _, k := range key {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
