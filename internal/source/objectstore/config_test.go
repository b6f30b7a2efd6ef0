package objectstore

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		return Config{
			Endpoint:        "https://minio.storage:9000",
			Region:          testRegion,
			Bucket:          testBucket,
			Prefix:          testPrefix,
			Credentials:     &Credentials{AccessKeyID: "a", SecretAccessKey: "s"},
			BytesPerTuple:   100,
			KeyTimeLayout:   testLayout,
			Settle:          time.Minute,
			TuplesPerObject: 0,
		}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("Validate of a valid config: %v", err)
	}
	for _, change := range []func(*Config){
		func(c *Config) { c.Endpoint, c.Region, c.Prefix, c.KeyTimeLayout, c.Settle = "", "", "", "", 0 },
		func(c *Config) { c.Credentials = nil },
		func(c *Config) { c.TuplesPerObject, c.BytesPerTuple = 9500, 0 },
		func(c *Config) { c.Endpoint = "http://127.0.0.1:9000/base" },
	} {
		cfg := valid()
		change(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate of %+v: %v", cfg, err)
		}
	}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr string
	}{
		{"endpoint not a URL", func(c *Config) { c.Endpoint = "http://[::1" }, "objectstore config: endpoint: parse"},
		{"endpoint without a scheme", func(c *Config) { c.Endpoint = "minio:9000" }, `objectstore config: endpoint: "minio:9000": want an http or https URL`},
		{"endpoint without a host", func(c *Config) { c.Endpoint = "http:///path" }, `objectstore config: endpoint: "http:///path" has no host`},
		{"no bucket", func(c *Config) { c.Bucket = "" }, "objectstore config: bucket: must not be empty"},
		{"bucket with a path", func(c *Config) { c.Bucket = "events/clicks" }, `objectstore config: bucket: "events/clicks" holds a '/'`},
		{"prefix not UTF-8", func(c *Config) { c.Prefix = "\xff" }, `objectstore config: prefix: "\xff" is not valid UTF-8`},
		{"neither count", func(c *Config) { c.BytesPerTuple = 0 },
			"objectstore config: tuplesPerObject or bytesPerTuple: exactly one must be set, got 0 and 0"},
		{"both counts", func(c *Config) { c.TuplesPerObject = 1 },
			"objectstore config: tuplesPerObject or bytesPerTuple: exactly one must be set, got 1 and 100"},
		{"negative tuples per object", func(c *Config) { c.TuplesPerObject = -1 }, "objectstore config: tuplesPerObject: must not be negative, got -1"},
		{"negative bytes per tuple", func(c *Config) { c.BytesPerTuple = -5 }, "objectstore config: bytesPerTuple: must not be negative, got -5"},
		{"negative settle", func(c *Config) { c.Settle = -time.Second }, "objectstore config: settle: must not be negative, got -1s"},
		{"layout without time", func(c *Config) { c.KeyTimeLayout = "logs/" }, `objectstore config: keyTimeLayout: "logs/" holds no time element`},
		{"layout with unpadded days", func(c *Config) { c.KeyTimeLayout = "2006/1/2" },
			`objectstore config: keyTimeLayout: "2006/1/2" formats instants to different lengths, such as "2009/5/3" and "2026/12/23"`},
		{"no access key", func(c *Config) { c.Credentials.AccessKeyID = "" }, "objectstore config: credentials.accessKeyID: must not be empty"},
		{"no secret", func(c *Config) { c.Credentials.SecretAccessKey = "" }, "objectstore config: credentials.secretAccessKey: must not be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := valid()
			tc.change(&cfg)
			err := cfg.Validate()
			if err == nil {
				t.Fatalf("Validate succeeded, want an error containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestKeyTimeLayout(t *testing.T) {
	tests := []struct {
		layout       string
		wantSortable bool
		// wantErr is empty for a layout newKeyTime accepts.
		wantErr string
	}{
		{layout: testLayout, wantSortable: true},
		{layout: "2006-01-02T15:04:05.000000000Z", wantSortable: true},
		{layout: "20060102", wantSortable: true},
		{layout: "2006/002/15", wantSortable: true},
		{layout: "dt=2006-01-02/hour=15", wantSortable: true},
		{layout: "2006年01月02日", wantSortable: true},
		{layout: "02-01-2006/15-04-05"},
		{layout: "2006/01/02/03-04PM"},
		{layout: "2006-Jan-02"},
		{layout: "Mon/2006/01/02"},
		{layout: "06/01/02"}, // 1999 then 2000 sort backwards.
		{layout: "2006-01-02T15:04:05-0700"},
		{layout: "", wantErr: `"" holds no time element`},
		{layout: "15:04:05", wantErr: `"15:04:05" holds no year`},
		{layout: "Monday 2006", wantErr: `formats instants to different lengths`},
		{layout: "January 2006", wantErr: `formats instants to different lengths`},
		{layout: "2006-01-02 3PM", wantErr: `formats instants to different lengths`},
		{layout: "2006-01-02.999", wantErr: `formats instants to different lengths`},
		{layout: "2006-01-02 MST", wantErr: `formats instants to different lengths`},
		{layout: "2006-01-02Z07:00", wantErr: `formats instants to different lengths`},
		{layout: "Jan 2006 Mon", wantErr: `does not read back the instants it writes, such as "May 2009 Sun"`},
	}
	for _, tc := range tests {
		t.Run(tc.layout, func(t *testing.T) {
			k, err := newKeyTime(tc.layout)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("newKeyTime error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("newKeyTime: %v", err)
			}
			if k.sortable != tc.wantSortable {
				t.Errorf("sortable = %t, want %t", k.sortable, tc.wantSortable)
			}
		})
	}
}

func TestKeyTimeParse(t *testing.T) {
	k, err := newKeyTime(testLayout)
	if err != nil {
		t.Fatalf("newKeyTime: %v", err)
	}
	tests := []struct {
		rest   string
		want   time.Time
		wantOK bool
	}{
		{"2026/12/01/00-30-15", time.Date(2026, 12, 1, 0, 30, 15, 0, time.UTC), true},
		{"2026/12/01/00-30-15-part-0001.json", time.Date(2026, 12, 1, 0, 30, 15, 0, time.UTC), true},
		{"2026/12/01/00-30-1", time.Time{}, false},
		{"2026/12/01/00-61-00.json", time.Time{}, false},
		{"2026/02/30/00-00-00.json", time.Time{}, false},
		{"2026/12/01/ 0-30-15.json", time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tc := range tests {
		got, ok := k.parse(tc.rest)
		if ok != tc.wantOK || !got.Equal(tc.want) {
			t.Errorf("parse(%q) = %v, %t; want %v, %t", tc.rest, got, ok, tc.want, tc.wantOK)
		}
	}

	// A key with an offset is read at its instant.
	k, err = newKeyTime("2006-01-02T15:04-07:00")
	if err != nil {
		t.Fatalf("newKeyTime: %v", err)
	}
	if got, ok := k.parse("2026-12-01T09:30+09:30/x"); !ok || !got.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("parse with an offset = %v, %t; want the window start", got, ok)
	}
}

func TestListingRange(t *testing.T) {
	k, err := newKeyTime(testLayout)
	if err != nil {
		t.Fatalf("newKeyTime: %v", err)
	}
	if got, want := k.startAfter(testPrefix, windowStart), "clicks/2026/12/01/00-00-0"; got != want {
		t.Errorf("startAfter = %q, want %q", got, want)
	}
	wide, err := newKeyTime("2006年01月02日")
	if err != nil {
		t.Fatalf("newKeyTime: %v", err)
	}
	// The last character, not byte, goes.
	if got, want := wide.startAfter("", windowStart), "2026年12月01"; got != want {
		t.Errorf("startAfter = %q, want %q", got, want)
	}
	for key, want := range map[string]bool{
		"clicks/2026/12/01/00-59-59.json": false,
		"clicks/2026/12/01/01-00-00":      false,
		"clicks/2026/12/01/01-00-00.json": false,
		"clicks/2026/12/01/01-00-01":      true,
		"clicks/2026/12/01/01-0":          false,
		"clicks/2027":                     true,
		"clicks/manifest":                 true,
	} {
		if got := k.pastWindow(testPrefix, key, windowEnd); got != want {
			t.Errorf("pastWindow(%q) = %t, want %t", key, got, want)
		}
	}
}

func TestCredentialsFromSecret(t *testing.T) {
	tests := []struct {
		name string
		data map[string][]byte
		want *Credentials
	}{
		{
			name: "long-term",
			data: map[string][]byte{"accessKeyID": []byte("AKID"), "secretAccessKey": []byte("se/cr+et"), "region": []byte("ignored")},
			want: &Credentials{AccessKeyID: "AKID", SecretAccessKey: "se/cr+et"},
		},
		{
			name: "temporary",
			data: map[string][]byte{"accessKeyID": []byte("ASIA"), "secretAccessKey": []byte("s"), "sessionToken": []byte("token")},
			want: &Credentials{AccessKeyID: "ASIA", SecretAccessKey: "s", SessionToken: "token"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CredentialsFromSecret(tc.data)
			if err != nil {
				t.Fatalf("CredentialsFromSecret: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CredentialsFromSecret (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCredentialsFromSecretErrors(t *testing.T) {
	// with is complete data with key set to value, or removed for a nil value.
	with := func(key string, value []byte) map[string][]byte {
		data := map[string][]byte{"accessKeyID": []byte("AKID"), "secretAccessKey": []byte("s"), "sessionToken": []byte("t")}
		if value == nil {
			delete(data, key)
		} else {
			data[key] = value
		}
		return data
	}
	tests := []struct {
		name    string
		data    map[string][]byte
		wantErr string
	}{
		{"no data", nil, `secret key "accessKeyID" is missing`},
		{"accessKeyID missing", with("accessKeyID", nil), `secret key "accessKeyID" is missing`},
		{"secretAccessKey missing", with("secretAccessKey", nil), `secret key "secretAccessKey" is missing`},
		{"accessKeyID empty", with("accessKeyID", []byte{}), `secret key "accessKeyID" is empty`},
		{"secretAccessKey empty", with("secretAccessKey", []byte{}), `secret key "secretAccessKey" is empty`},
		{"sessionToken empty", with("sessionToken", []byte{}), `secret key "sessionToken" is empty`},
		{"trailing newline", with("secretAccessKey", []byte("s\n")), `secret key "secretAccessKey" holds whitespace (a trailing newline?)`},
		{"inner space", with("accessKeyID", []byte("AK ID")), `secret key "accessKeyID" holds whitespace`},
		{"space in the token", with("sessionToken", []byte(" t")), `secret key "sessionToken" holds whitespace`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CredentialsFromSecret(tc.data)
			if err == nil {
				t.Fatalf("CredentialsFromSecret = %+v, want an error containing %q", got, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("CredentialsFromSecret error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
