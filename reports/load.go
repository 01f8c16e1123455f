package reports

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// MaxResultsSize bounds the size of a results.json that Load and Decode
// read: ample for tens of thousands of scenarios, small enough that a wrong
// file cannot exhaust memory.
const MaxResultsSize = 256 << 20

// Load reads the results.json at path. It accepts any document of the same
// major schema version, ignoring fields it does not know; otherwise the error
// names the file and the version and wraps ErrSchemaVersion. A document whose
// verdicts this build does not know wraps ErrInvalid.
func Load(path string) (*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load results: %w", err)
	}
	defer f.Close()
	r, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return r, nil
}

// Decode reads a results document from rd (see Load).
func Decode(rd io.Reader) (*Run, error) {
	data, err := io.ReadAll(io.LimitReader(rd, MaxResultsSize+1))
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	if len(data) > MaxResultsSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, MaxResultsSize)
	}
	// Read the version first, so a document of another major is refused for
	// its version and not for whatever else changed with it.
	var head struct {
		SchemaVersion *string `json:"schemaVersion"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: not a results document: %v", ErrInvalid, err)
	}
	if head.SchemaVersion == nil {
		return nil, checkVersion("")
	}
	if err := checkVersion(*head.SchemaVersion); err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%w: schemaVersion %s: %v", ErrInvalid, *head.SchemaVersion, err)
	}
	if err := checkVerdicts(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkVerdicts refuses verdicts this build does not know: every other
// unknown value (an artifact or event kind of a newer minor) is rendered as
// it is, but a verdict decides the exit code.
func checkVerdicts(r *Run) error {
	v := &validator{}
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		if !s.Verdict.Valid() {
			v.add(fmt.Sprintf("scenarios[%d].verdict", i), string(s.Verdict), "is not a verdict")
		}
		for j := range s.Attempts {
			if a := &s.Attempts[j]; !a.Verdict.Valid() {
				v.add(fmt.Sprintf("scenarios[%d].attempts[%d].verdict", i, j), string(a.Verdict), "is not a verdict")
			}
		}
	}
	return v.err()
}
