//go:build linux

package tools

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// The superuser policy statements a lab sends with "magisk --sqlite"
// (lab-reference C.4), applied to the su daemon's policy file. Other SQL
// is refused: there is no Magisk database on a virtual device.
var (
	replaceRE = regexp.MustCompile(`(?i)^\s*(?:REPLACE|INSERT(?:\s+OR\s+REPLACE)?)\s+INTO\s+policies\s*\(([^)]*)\)\s*VALUES\s*\(([^)]*)\)\s*;?\s*$`)
	deleteRE  = regexp.MustCompile(`(?i)^\s*DELETE\s+FROM\s+policies\s+WHERE\s+uid\s*=\s*(\d+)\s*;?\s*$`)
)

// errUnsupportedSQL is returned for statements other than the two shapes.
var errUnsupportedSQL = errors.New("only REPLACE INTO policies (...) VALUES (...) and DELETE FROM policies WHERE uid=N are supported on a virtual device")

// applyPolicySQL updates the policy file: policy 2 (allow) grants root to
// the uid, anything else (query, deny, restrict) denies it, since nobody
// can answer a prompt; DELETE returns the uid to the default.
func applyPolicySQL(file, sql string) error {
	var uid int
	var line string
	if m := replaceRE.FindStringSubmatch(sql); m != nil {
		cols := strings.Split(m[1], ",")
		vals := strings.Split(m[2], ",")
		if len(cols) != len(vals) {
			return fmt.Errorf("%d columns, %d values", len(cols), len(vals))
		}
		row := map[string]string{}
		for i := range cols {
			row[strings.ToLower(strings.TrimSpace(cols[i]))] = strings.TrimSpace(vals[i])
		}
		var err error
		if uid, err = strconv.Atoi(row["uid"]); err != nil || uid < 0 {
			return fmt.Errorf("bad uid %q", row["uid"])
		}
		verdict := "deny"
		if row["policy"] == "2" {
			verdict = "allow"
		}
		line = fmt.Sprintf("%d %s", uid, verdict)
	} else if m := deleteRE.FindStringSubmatch(sql); m != nil {
		uid, _ = strconv.Atoi(m[1])
	} else {
		return errUnsupportedSQL
	}
	var kept []string
	if b, err := os.ReadFile(file); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] != strconv.Itoa(uid) {
				kept = append(kept, sc.Text())
			}
		}
	}
	if line != "" {
		kept = append(kept, line)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(kept, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
