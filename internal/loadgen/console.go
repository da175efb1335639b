package loadgen

import (
	"context"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// The console operations measure a target's web console (Coffer's ops
// listener) as a browser uses it, over plain HTTP with a session cookie:
//
//   - CONSOLE-SIGN-IN: GET /login, then POST /login with the form's
//     fields (its hidden ones too, whatever they are), the console user
//     and password, and the Origin a browser sends; success is the 303
//     with a session cookie. Coffer checks the password with argon2id,
//     on purpose slow (19 MiB, 2 passes by default), and with as many
//     checks at once as it has CPUs: this is that cost.
//   - CONSOLE-BUCKETS: the Buckets page (GET /buckets).
//   - CONSOLE-OBJECTS: the object browser's first page of the prefix
//     holding the prepared objects (GET /objects/BUCKET?prefix=obj-).
//   - CONSOLE-DOWNLOAD: an object downloaded through the console
//     (GET /objects/BUCKET/download?key=K).
//
// Each worker signs in once before measuring and keeps its session for
// the three pages.

// maxLoginPage bounds how much of the sign-in page is read for its form.
const maxLoginPage = 256 << 10

var (
	loginFormRE = regexp.MustCompile(`(?is)<form[^>]*action="/login"[^>]*>(.*?)</form>`)
	inputRE     = regexp.MustCompile(`(?is)<input\b[^>]*>`)
	attrRE      = regexp.MustCompile(`(?is)\b(type|name|value)\s*=\s*"([^"]*)"`)
)

// hiddenFields returns the hidden inputs of the sign-in form of page.
func hiddenFields(page string) (url.Values, error) {
	m := loginFormRE.FindStringSubmatch(page)
	if m == nil {
		return nil, errors.New("no sign-in form (action=\"/login\") on the page")
	}
	v := url.Values{}
	for _, in := range inputRE.FindAllString(m[1], -1) {
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllStringSubmatch(in, -1) {
			attrs[strings.ToLower(a[1])] = html.UnescapeString(a[2])
		}
		if strings.EqualFold(attrs["type"], "hidden") && attrs["name"] != "" {
			v.Add(attrs["name"], attrs["value"])
		}
	}
	return v, nil
}

// consoleSignIn signs in to the target's console through its form and
// returns the session cookie ("name=value").
func (c *client) consoleSignIn(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.t.ConsoleURL+"/login", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.consoleHC.Do(req)
	if err != nil {
		return "", c.transportError(ctx, err)
	}
	page, err := io.ReadAll(io.LimitReader(resp.Body, maxLoginPage))
	resp.Body.Close()
	if err != nil {
		return "", c.transportError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", &opError{Code: "SignInPage", Status: resp.StatusCode, Message: "GET /login"}
	}
	form, err := hiddenFields(string(page))
	if err != nil {
		return "", &opError{Code: "SignInPage", Status: resp.StatusCode, Message: err.Error()}
	}
	form.Set("username", c.t.ConsoleUser)
	form.Set("password", c.t.ConsolePassword)
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, c.t.ConsoleURL+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.t.ConsoleURL)
	resp, err = c.consoleHC.Do(req)
	if err != nil {
		return "", c.transportError(ctx, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		code := "SignInFailed"
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			code = "LockedOut"
		case http.StatusServiceUnavailable:
			code = "SignInBusy"
		}
		return "", &opError{Code: code, Status: resp.StatusCode}
	}
	for _, ck := range resp.Cookies() {
		if strings.HasSuffix(ck.Name, "_session") {
			return ck.Name + "=" + ck.Value, nil
		}
	}
	return "", &opError{Code: "SignInFailed", Status: resp.StatusCode, Message: "no session cookie"}
}

// consoleGet GETs path (with its query) from the console with the
// session cookie and drains the page into buf. A redirect is a failure:
// to /login it means the session ended.
func (c *client) consoleGet(ctx context.Context, cookie, path string, buf []byte) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.t.ConsoleURL+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Cookie", cookie)
	resp, err := c.consoleHC.Do(req)
	if err != nil {
		return 0, c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode == http.StatusSeeOther && resp.Header.Get("Location") == "/login" {
			return 0, &opError{Code: "SessionEnded", Status: resp.StatusCode}
		}
		return 0, &opError{Code: "HTTP" + strconv.Itoa(resp.StatusCode), Status: resp.StatusCode}
	}
	var n int64
	for {
		m, err := resp.Body.Read(buf)
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, c.transportError(ctx, err)
		}
	}
}

// transportError is err of a request that got no answer.
func (c *client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &opError{Code: "ConnectionError", Message: connMessage(err)}
}

// consolePath returns the console path op GETs for a key of bucket.
func consolePath(op int, bucket, key string) string {
	switch op {
	case opConsoleBuckets:
		return "/buckets"
	case opConsoleObjects:
		return "/objects/" + url.PathEscape(bucket) + "?prefix=obj-"
	}
	return "/objects/" + url.PathEscape(bucket) + "/download?key=" + url.QueryEscape(key)
}

// isConsoleOp reports whether op is a console operation.
func isConsoleOp(op int) bool {
	return op == opConsoleSignIn || op == opConsoleBuckets || op == opConsoleObjects || op == opConsoleDownload
}
