package main

import (
	"errors"
	"os/user"
	"testing"
)

func TestCITruthy(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"true", true}, {"TRUE", true}, {"True", true}, {"1", true}, {"yes", true}, {"YES", true},
		{"on", true}, {"On", true}, {" true\n", true},
		{"", false}, {"false", false}, {"0", false}, {"no", false}, {"off", false}, {"ci", false}, {"2", false},
	}
	for _, tt := range tests {
		if got := ciTruthy(tt.v); got != tt.want {
			t.Errorf("ciTruthy(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestUserName(t *testing.T) {
	alice := func() (*user.User, error) { return &user.User{Username: "alice"}, nil }
	fails := func() (*user.User, error) { return nil, errors.New("no passwd entry") }
	env := func(user string) func(string) string {
		return func(k string) string {
			if k == "USER" {
				return user
			}
			return ""
		}
	}
	tests := []struct {
		name    string
		getenv  func(string) string
		current func() (*user.User, error)
		want    string
	}{
		{"$USER wins", env("bob"), alice, "bob"},
		{"the OS user without $USER", env(""), alice, "alice"},
		{"nobody known", env(""), fails, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := userName(tt.getenv, tt.current); got != tt.want {
				t.Errorf("userName = %q, want %q", got, tt.want)
			}
		})
	}
}
