package junit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"regexp"
	"strconv"
)

// decimal is the xs:decimal form the JUnit schema gives time attributes.
var decimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// node is an XML element read without knowing its shape, so that Check
// judges the document and not what this package's types make of it.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
}

func (n node) attr(name string) (string, bool) {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// Check reports where doc departs from the JUnit XML that test reporters
// read: the Jenkins/Ant schema's element nesting (testsuites holding
// testsuite holding testcase), the attributes GitLab's and GitHub's
// readers require (a suite's name, tests, failures, errors and time; a
// case's name, classname and time, in decimal seconds; a failure's or an
// error's message), and counts that agree with the cases. A testcase may
// carry properties first, as pytest and Surefire write them; readers that
// do not know them skip them.
func Check(doc []byte) []error {
	var root node
	if err := xml.NewDecoder(bytes.NewReader(doc)).Decode(&root); err != nil {
		return []error{fmt.Errorf("not well-formed XML: %w", err)}
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if root.XMLName.Local != "testsuites" {
		return []error{fmt.Errorf("root element is <%s>, want <testsuites>", root.XMLName.Local)}
	}
	var total [4]int
	for _, suite := range root.Children {
		if suite.XMLName.Local != "testsuite" {
			bad("<testsuites> holds <%s>; only <testsuite> may be there", suite.XMLName.Local)
			continue
		}
		name, _ := suite.attr("name")
		where := fmt.Sprintf("testsuite %q", name)
		want := map[string]int{}
		for _, a := range []string{"name", "tests", "failures", "errors", "time"} {
			if _, ok := suite.attr(a); !ok {
				bad("%s: no %s attribute", where, a)
			}
		}
		if t, _ := suite.attr("time"); !decimal.MatchString(t) {
			bad("%s: time %q is not decimal seconds", where, t)
		}
		for _, c := range suite.Children {
			switch c.XMLName.Local {
			case "properties", "system-out", "system-err":
				continue
			case "testcase":
			default:
				bad("%s holds <%s>", where, c.XMLName.Local)
				continue
			}
			cname, _ := c.attr("name")
			cwhere := fmt.Sprintf("%s testcase %q", where, cname)
			want["tests"]++
			for _, a := range []string{"name", "classname", "time"} {
				if v, ok := c.attr(a); !ok || v == "" && a != "time" {
					bad("%s: no %s attribute", cwhere, a)
				}
			}
			if t, _ := c.attr("time"); !decimal.MatchString(t) {
				bad("%s: time %q is not decimal seconds", cwhere, t)
			}
			for i, x := range c.Children {
				switch x.XMLName.Local {
				case "properties":
					if i != 0 {
						bad("%s: <properties> must come first", cwhere)
					}
					for _, p := range x.Children {
						_, n := p.attr("name")
						_, v := p.attr("value")
						if p.XMLName.Local != "property" || !n || !v {
							bad("%s: <properties> holds a <%s> without name and value", cwhere, p.XMLName.Local)
						}
					}
				case "failure", "error":
					want[x.XMLName.Local+"s"]++
					if _, ok := x.attr("message"); !ok {
						bad("%s: <%s> has no message attribute", cwhere, x.XMLName.Local)
					}
				case "skipped":
					want["skipped"]++
				case "system-out", "system-err":
				default:
					bad("%s holds <%s>", cwhere, x.XMLName.Local)
				}
			}
		}
		for i, a := range []string{"tests", "failures", "errors", "skipped"} {
			v, ok := suite.attr(a)
			if !ok && a == "skipped" {
				v = "0"
			}
			n, err := strconv.Atoi(v)
			if ok && err != nil || n != want[a] {
				bad("%s: %s=%q, but its cases count %d", where, a, v, want[a])
			}
			total[i] += want[a]
		}
	}
	for i, a := range []string{"tests", "failures", "errors", "skipped"} {
		if v, ok := root.attr(a); ok && v != strconv.Itoa(total[i]) {
			bad("testsuites: %s=%q, but its suites count %d", a, v, total[i])
		}
	}
	return errs
}
