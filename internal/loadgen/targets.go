package loadgen

import (
	"fmt"

	"github.com/BurntSushi/toml"
)

// LoadTargets reads a TOML file of targets:
//
//	[[target]]
//	name = "minio"
//	url = "http://127.0.0.1:9100"
//	access_key = "minioadmin"   # optional: else --access-key / COFFER_ACCESS_KEY
//	secret_key = "minioadmin"
//	region = "us-east-1"        # optional
//	console_url = "http://127.0.0.1:6790"  # optional, with the two below: the
//	console_user = "alice"                 # web console and a sign-in for the
//	console_password = "…"                 # console cases (Coffer's own)
//
// Unknown keys are an error, so that a typo does not silently fall back to
// the default credentials.
func LoadTargets(path string) ([]Target, error) {
	var f struct {
		Target []struct {
			Name      string `toml:"name"`
			URL       string `toml:"url"`
			AccessKey string `toml:"access_key"`
			SecretKey string `toml:"secret_key"`
			Region    string `toml:"region"`

			ConsoleURL      string `toml:"console_url"`
			ConsoleUser     string `toml:"console_user"`
			ConsolePassword string `toml:"console_password"`
		} `toml:"target"`
	}
	md, err := toml.DecodeFile(path, &f)
	if err != nil {
		return nil, fmt.Errorf("targets file: %w", err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		return nil, fmt.Errorf("targets file %s: unknown key %s", path, u[0])
	}
	if len(f.Target) == 0 {
		return nil, fmt.Errorf("targets file %s: no [[target]]", path)
	}
	var out []Target
	for _, ft := range f.Target {
		t, err := ParseTarget(ft.Name + "=" + ft.URL)
		if err != nil {
			return nil, fmt.Errorf("targets file %s: %w", path, err)
		}
		if (ft.AccessKey == "") != (ft.SecretKey == "") {
			return nil, fmt.Errorf("targets file %s: target %s: give both access_key and secret_key, or neither", path, ft.Name)
		}
		t.AccessKey, t.SecretKey, t.Region = ft.AccessKey, ft.SecretKey, ft.Region
		if ft.ConsoleURL != "" || ft.ConsoleUser != "" || ft.ConsolePassword != "" {
			c, err := ParseTarget(ft.Name + "=" + ft.ConsoleURL)
			if err != nil {
				return nil, fmt.Errorf("targets file %s: console_url of target %s: %w", path, ft.Name, err)
			}
			if ft.ConsoleUser == "" || ft.ConsolePassword == "" {
				return nil, fmt.Errorf("targets file %s: target %s: give console_url, console_user and console_password together", path, ft.Name)
			}
			t.ConsoleURL, t.ConsoleUser, t.ConsolePassword = c.URL, ft.ConsoleUser, ft.ConsolePassword
		}
		out = append(out, t)
	}
	return out, nil
}
