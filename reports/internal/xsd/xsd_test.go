package xsd

import (
	"errors"
	"os"
	"strings"
	"testing"
)

const testSchema = `<?xml version="1.0"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="level">
    <xs:restriction base="xs:string">
      <xs:enumeration value="low"/>
      <xs:enumeration value="high"/>
    </xs:restriction>
  </xs:simpleType>
  <xs:simpleType name="code">
    <xs:restriction base="xs:string">
      <xs:pattern value="[A-Z]{2}[0-9]+"/>
      <xs:maxLength value="6"/>
    </xs:restriction>
  </xs:simpleType>
  <xs:simpleType name="percent">
    <xs:restriction base="xs:decimal">
      <xs:minInclusive value="0"/>
      <xs:maxInclusive value="100"/>
    </xs:restriction>
  </xs:simpleType>
  <xs:element name="note" type="xs:string"/>
  <xs:element name="item">
    <xs:complexType mixed="true">
      <xs:attribute name="code" type="code" use="required"/>
      <xs:attribute name="level" type="level"/>
      <xs:attribute name="share" type="percent"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="list">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="title" type="xs:token"/>
        <xs:choice minOccurs="0" maxOccurs="unbounded">
          <xs:element ref="item"/>
          <xs:element ref="note"/>
        </xs:choice>
        <xs:element name="count" type="xs:nonNegativeInteger" minOccurs="0"/>
        <xs:element name="at" type="xs:dateTime" minOccurs="0"/>
      </xs:sequence>
      <xs:attribute name="flag" type="xs:boolean"/>
    </xs:complexType>
  </xs:element>
</xs:schema>`

func mustParse(t testing.TB, s string) *Schema {
	t.Helper()
	sc, err := Parse(strings.NewReader(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return sc
}

func TestValidate(t *testing.T) {
	t.Parallel()
	sc := mustParse(t, testSchema)
	tests := []struct {
		name string
		doc  string
		want string // substring of the error; "" = valid
	}{
		{"minimal", `<list><title>x</title></list>`, ""},
		{"full", `<list flag="true"><title>a b</title><item code="AB12" level="low" share="12.5">text</item><note>n</note><item code="CD3"/><count>3</count><at>2026-03-02T01:00:00Z</at></list>`, ""},
		{"missing required child", `<list><item code="AB1"/></list>`, "child <item> (number 1) is not allowed here"},
		{"order", `<list><title>x</title><count>1</count><item code="AB1"/></list>`, "child <item> (number 3)"},
		{"unknown child", `<list><title>x</title><bogus/></list>`, "child <bogus>"},
		{"too many", `<list><title>x</title><count>1</count><count>2</count></list>`, "child <count> (number 3)"},
		{"missing required attribute", `<list><title>x</title><item/></list>`, `required attribute "code" is missing`},
		{"undeclared attribute", `<list what="1"><title>x</title></list>`, `attribute "what" is not declared`},
		{"enumeration", `<list><title>x</title><item code="AB1" level="mid"/></list>`, `is not one of low, high`},
		{"pattern", `<list><title>x</title><item code="ab1"/></list>`, "does not match the pattern"},
		{"maxLength", `<list><title>x</title><item code="AB12345"/></list>`, "outside the type"},
		{"range", `<list><title>x</title><item code="AB1" share="101"/></list>`, "out of range"},
		{"decimal", `<list><title>x</title><item code="AB1" share="1e3"/></list>`, "is not a decimal"},
		{"int", `<list><title>x</title><count>-1</count></list>`, "not an integer"},
		{"boolean", `<list flag="yes"><title>x</title></list>`, "not a boolean"},
		{"dateTime", `<list><title>x</title><at>yesterday</at></list>`, "not an xs:dateTime"},
		{"token", `<list><title> x</title></list>`, "leading, trailing or double spaces"},
		{"text in element-only", `<list>stray<title>x</title></list>`, "text is not allowed"},
		{"child in simple", `<list><title>x</title><note><b/></note></list>`, "simple type has child"},
		{"undeclared root", `<other/>`, "root element <other> is not declared"},
		{"malformed", `<list><title>x</list>`, "not well-formed"},
		{"path names the element", `<list><title>x</title><note>a</note><item code="AB1"/><item code="x"/></list>`, "/list/item[2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := sc.Validate(strings.NewReader(tc.doc))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted an invalid document; want error containing %q", tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}

func TestParseRefusesUnsupported(t *testing.T) {
	t.Parallel()
	wrap := func(body string) string {
		return `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">` + body + `</xs:schema>`
	}
	tests := []struct {
		name, schema string
	}{
		{"any", wrap(`<xs:element name="a"><xs:complexType><xs:sequence><xs:any/></xs:sequence></xs:complexType></xs:element>`)},
		{"all", wrap(`<xs:element name="a"><xs:complexType><xs:all/></xs:complexType></xs:element>`)},
		{"namespace", `<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:x"/>`},
		{"untyped element", wrap(`<xs:element name="a"/>`)},
		{"unknown builtin", wrap(`<xs:element name="a" type="xs:duration"/>`)},
		{"extension", wrap(`<xs:element name="a"><xs:complexType><xs:simpleContent/></xs:complexType></xs:element>`)},
		{"import", wrap(`<xs:import namespace="urn:x"/>`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(tc.schema)); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Parse = %v, want ErrUnsupported", err)
			}
		})
	}
	if _, err := Parse(strings.NewReader(wrap(`<xs:element name="a"><xs:complexType><xs:sequence><xs:element ref="nope"/></xs:sequence></xs:complexType></xs:element>`))); err == nil ||
		!strings.Contains(err.Error(), `ref "nope"`) {
		t.Fatalf("dangling ref: Parse = %v", err)
	}
}

// FuzzValidate feeds arbitrary documents to the JUnit schema of the reports
// package: validation may fail but must never panic or hang.
func FuzzValidate(f *testing.F) {
	data, err := os.ReadFile("../../testdata/junit.xsd")
	if err != nil {
		f.Fatal(err)
	}
	sc := mustParse(f, string(data))
	f.Add(`<testsuites><testsuite name="a" tests="1"><testcase name="x"><skipped message="m"/></testcase></testsuite></testsuites>`)
	f.Add(`<testsuites tests="-1"/>`)
	f.Add(`<testsuite name="a" tests="0" timestamp="2026-01-01T00:00:00"><properties><property name="a" value="b"/></properties></testsuite>`)
	f.Add(`<a><b><c>`)
	f.Fuzz(func(t *testing.T, doc string) {
		_ = sc.Validate(strings.NewReader(doc))
	})
}
