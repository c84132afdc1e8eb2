package event

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTimeMarshal(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"utc micro", time.Date(2025, 1, 15, 14, 30, 0, 123456000, time.UTC), `"2025-01-15T14:30:00.123456Z"`},
		{"nanos truncated", time.Date(2025, 1, 15, 14, 30, 0, 123456789, time.UTC), `"2025-01-15T14:30:00.123456Z"`},
		{"whole second", time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC), `"2025-01-15T14:30:00.000000Z"`},
		{"offset converted", time.Date(2025, 1, 15, 16, 30, 0, 0, time.FixedZone("x", 2*3600)), `"2025-01-15T14:30:00.000000Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(NewTime(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Marshal = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestTimeUnmarshal(t *testing.T) {
	want := time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC)
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantErr bool
	}{
		{"micro", `"2025-01-15T14:30:00.000000Z"`, want, false},
		{"no fraction", `"2025-01-15T14:30:00Z"`, want, false},
		{"offset", `"2025-01-15T15:30:00+01:00"`, want, false},
		{"nanos", `"2025-01-15T14:30:00.000000001Z"`, want.Add(time.Nanosecond), false},
		{"null", `null`, time.Time{}, false},
		{"not rfc3339", `"15 Jan 2025"`, time.Time{}, true},
		{"number", `12`, time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Time
			err := json.Unmarshal([]byte(tt.in), &got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !got.Equal(tt.want) {
				t.Errorf("got %v, want %v", got.Time, tt.want)
			}
			if err == nil && !got.IsZero() && got.Location() != time.UTC {
				t.Errorf("location = %v, want UTC", got.Location())
			}
		})
	}
}
