package debrepo

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index string
		wants []Want
		want  string   // the closure, "name=version" by name
		err   []string // what its error must say instead
	}{{
		name:  "the newest version",
		index: "Package: a\nVersion: 1.0\n\nPackage: a\nVersion: 1:0.5\n\nPackage: a\nVersion: 2.0~rc1",
		wants: []Want{{Name: "a"}},
		want:  "a=1:0.5",
	}, {
		name:  "an exact version constrains the dependencies too",
		index: "Package: a\nVersion: 1.0-1\n\nPackage: a\nVersion: 2.0-1\n\nPackage: b\nVersion: 1\nDepends: a (>= 1.0)",
		wants: []Want{{Name: "b"}, {Name: "a", Version: "1.0-1"}},
		want:  "a=1.0-1 b=1",
	}, {
		name:  "a version prefix",
		index: "Package: k\nVersion: 1.37.2-1\n\nPackage: k\nVersion: 1.37.2-2\n\nPackage: k\nVersion: 1.38.0-1",
		wants: []Want{{Name: "k", Version: "1.37.2-*"}},
		want:  "k=1.37.2-2",
	}, {
		name: "version relations",
		index: "Package: x\nVersion: 1\nDepends: a (<< 2), b (<= 2), c (= 2), d (>= 2), e (>> 2)\n\n" +
			"Package: a\nVersion: 1\n\nPackage: a\nVersion: 2\n\nPackage: a\nVersion: 3\n\n" +
			"Package: b\nVersion: 1\n\nPackage: b\nVersion: 2\n\nPackage: b\nVersion: 3\n\n" +
			"Package: c\nVersion: 1\n\nPackage: c\nVersion: 2\n\nPackage: c\nVersion: 3\n\n" +
			"Package: d\nVersion: 1\n\nPackage: d\nVersion: 3\n\n" +
			"Package: e\nVersion: 2\n\nPackage: e\nVersion: 3",
		wants: []Want{{Name: "x"}},
		want:  "a=1 b=2 c=2 d=3 e=3 x=1",
	}, {
		name:  "the first satisfiable alternative",
		index: "Package: x\nVersion: 1\nDepends: nosuch | b (>= 5) | c | d\n\nPackage: b\nVersion: 1\n\nPackage: c\nVersion: 1\n\nPackage: d\nVersion: 1",
		wants: []Want{{Name: "x"}},
		want:  "c=1 x=1",
	}, {
		name:  "an alternative already chosen",
		index: "Package: x\nVersion: 1\nDepends: d, c | d\n\nPackage: c\nVersion: 1\n\nPackage: d\nVersion: 1",
		wants: []Want{{Name: "x"}},
		want:  "d=1 x=1",
	}, {
		name:  "a real package before a provider",
		index: "Package: x\nVersion: 1\nDepends: foo\n\nPackage: foo\nVersion: 1\n\nPackage: bar\nVersion: 1\nProvides: foo",
		wants: []Want{{Name: "x"}},
		want:  "foo=1 x=1",
	}, {
		name: "a virtual package's provider of highest priority",
		index: "Package: x\nVersion: 1\nDepends: mail-transport-agent\n\n" +
			"Package: postfix\nVersion: 3\nPriority: optional\nProvides: mail-transport-agent\n\n" +
			"Package: exim4\nVersion: 4\nPriority: standard\nProvides: mail-transport-agent\n\n" +
			"Package: dma\nVersion: 1\nPriority: optional\nProvides: mail-transport-agent",
		wants: []Want{{Name: "x"}},
		want:  "exim4=4 x=1",
	}, {
		name: "a versioned dependency takes a versioned provide",
		index: "Package: x\nVersion: 1\nDepends: libfoo (>= 2)\n\n" +
			"Package: aaa\nVersion: 1\nProvides: libfoo\n\n" +
			"Package: old\nVersion: 1\nProvides: libfoo (= 1.5)\n\n" +
			"Package: new\nVersion: 1\nProvides: libfoo (= 2.5)",
		wants: []Want{{Name: "x"}},
		want:  "new=1 x=1",
	}, {
		name:  "an unversioned provide does not satisfy a versioned dependency",
		index: "Package: x\nVersion: 1\nDepends: libfoo (>= 2)\n\nPackage: aaa\nVersion: 1\nProvides: libfoo",
		wants: []Want{{Name: "x"}},
		err:   []string{"want -> x=1 -> libfoo (>= 2): no version of libfoo", "provided by aaa=1"},
	}, {
		name:  "a want of a virtual name",
		index: "Package: gcc\nVersion: 12\nProvides: c-compiler",
		wants: []Want{{Name: "c-compiler"}},
		want:  "gcc=12",
	}, {
		name: "Pre-Depends, not Recommends nor Suggests",
		index: "Package: x\nVersion: 1\nPre-Depends: p\nRecommends: r\nSuggests: s\n\n" +
			"Package: p\nVersion: 1\n\nPackage: r\nVersion: 1\n\nPackage: s\nVersion: 1",
		wants: []Want{{Name: "x"}},
		want:  "p=1 x=1",
	}, {
		name: "architectures: all, and the host's only",
		index: "Package: x\nVersion: 1\nDepends: y, z\n\n" +
			"Package: y\nVersion: 1\nArchitecture: all\n\n" +
			"Package: z\nVersion: 1\nArchitecture: amd64\n\nPackage: z\nVersion: 2\nArchitecture: i386",
		wants: []Want{{Name: "x"}},
		want:  "x=1 y=1 z=1",
	}, {
		name:  "a package of another architecture only",
		index: "Package: x\nVersion: 1\nDepends: z\n\nPackage: z\nVersion: 2\nArchitecture: arm64",
		wants: []Want{{Name: "x"}},
		err:   []string{"want -> x=1 -> z: no index holds z for amd64"},
	}, {
		name: "architecture qualifiers",
		index: "Package: x\nVersion: 1\nDepends: python3:any, perl:native, libc6:amd64, tool:any\n\n" +
			"Package: python3\nVersion: 3.11\nMulti-Arch: allowed\n\n" +
			"Package: perl\nVersion: 5\n\nPackage: libc6\nVersion: 2.36\nMulti-Arch: same\n\n" +
			"Package: tool\nVersion: 1\nMulti-Arch: foreign",
		wants: []Want{{Name: "x"}},
		want:  "libc6=2.36 perl=5 python3=3.11 tool=1 x=1",
	}, {
		name:  ":any needs a package Multi-Arch allows",
		index: "Package: x\nVersion: 1\nDepends: libfoo:any\n\nPackage: libfoo\nVersion: 1\nMulti-Arch: same",
		wants: []Want{{Name: "x"}},
		err:   []string{"want -> x=1 -> libfoo:any: no version of libfoo", "(for any)"},
	}, {
		name:  "another architecture by name",
		index: "Package: x\nVersion: 1\nDepends: libfoo:i386\n\nPackage: libfoo\nVersion: 1\nMulti-Arch: same",
		wants: []Want{{Name: "x"}},
		err:   []string{"libfoo:i386: no version of libfoo"},
	}, {
		name: "constraints that conflict resolve again",
		index: "Package: a\nVersion: 1\nDepends: lib (>= 1)\n\nPackage: b\nVersion: 1\nDepends: lib (= 1.1)\n\n" +
			"Package: lib\nVersion: 1.0\n\nPackage: lib\nVersion: 1.1\n\nPackage: lib\nVersion: 1.2",
		wants: []Want{{Name: "a"}, {Name: "b"}},
		want:  "a=1 b=1 lib=1.1",
	}, {
		name: "a constraint that conflicts takes the next alternative",
		index: "Package: a\nVersion: 1\nDepends: lib (<< 2) | other\n\nPackage: b\nVersion: 1\nDepends: lib (>= 2)\n\n" +
			"Package: lib\nVersion: 1.5\n\nPackage: lib\nVersion: 2.5\n\nPackage: other\nVersion: 1",
		wants: []Want{{Name: "a"}, {Name: "b"}},
		want:  "a=1 b=1 lib=2.5 other=1",
	}, {
		name: "constraints that conflict fail naming both chains",
		index: "Package: a\nVersion: 1\nDepends: lib (<< 2)\n\nPackage: b\nVersion: 1\nDepends: mid\n\n" +
			"Package: mid\nVersion: 1\nDepends: lib (>= 2)\n\nPackage: lib\nVersion: 1.5\n\nPackage: lib\nVersion: 2.5",
		wants: []Want{{Name: "a"}, {Name: "b"}},
		err: []string{"want -> a=1 -> lib (<< 2): no version of lib meets every constraint",
			"(>= 2) from want -> b=1 -> mid=1", "(<< 2) from want -> a=1", "the indexes hold 2.5, 1.5"},
	}, {
		name:  "a want's version against a dependency",
		index: "Package: a\nVersion: 1\nDepends: lib (>= 2)\n\nPackage: lib\nVersion: 1\n\nPackage: lib\nVersion: 2",
		wants: []Want{{Name: "lib", Version: "1"}, {Name: "a"}},
		err:   []string{"want -> a=1 -> lib (>= 2)", "(= 1) from want", "1 chosen from want"},
	}, {
		name:  "a missing dependency names the chain",
		index: "Package: a\nVersion: 1\nDepends: b\n\nPackage: b\nVersion: 2\nDepends: libc6, nosuch (>= 1) | alsonot\n\nPackage: libc6\nVersion: 2",
		wants: []Want{{Name: "a"}},
		err:   []string{"want -> a=1 -> b=2 -> nosuch (>= 1) | alsonot: no index holds nosuch for amd64; no index holds alsonot for amd64"},
	}, {
		name:  "a want no index holds",
		index: "Package: a\nVersion: 1",
		wants: []Want{{Name: "b"}},
		err:   []string{"want -> b: no index holds b for amd64"},
	}, {
		name:  "an exact version no index holds",
		index: "Package: a\nVersion: 1",
		wants: []Want{{Name: "a", Version: "2"}},
		err:   []string{"want -> a (= 2): no version of a meets every constraint on it ((= 2) from want", "the indexes hold 1"},
	}, {
		name: "the base system comes too",
		index: "Package: x\nVersion: 1\n\nPackage: base-files\nVersion: 12\nEssential: yes\nDepends: awk\n\n" +
			"Package: mawk\nVersion: 1\nPriority: required\nProvides: awk\n\nPackage: libc6\nVersion: 2\nPriority: required\n\n" +
			"Package: vim\nVersion: 9\nPriority: optional\n\nPackage: gawk\nVersion: 5\nPriority: optional\nProvides: awk",
		wants: []Want{{Name: "x"}},
		want:  "base-files=12 libc6=2 mawk=1 x=1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			idx := index(t, tc.index)
			got, err := Resolve([]*Index{idx}, "amd64", tc.wants)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("got %s, want an error", names(got))
				}
				for _, s := range tc.err {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tc.want {
				t.Errorf("got  %s\nwant %s", names(got), tc.want)
			}
			if err := Check(got, "amd64"); err != nil {
				t.Errorf("not a closure: %v", err)
			}
		})
	}
}

// TestResolveDeterministic resolves the same packages split across
// indexes and shuffled, expecting one answer.
func TestResolveDeterministic(t *testing.T) {
	idx := index(t, "Package: x\nVersion: 1\nDepends: mta, c | d, e (>= 1)\n\n"+
		"Package: p1\nVersion: 1\nProvides: mta\n\nPackage: p2\nVersion: 1\nProvides: mta\n\nPackage: p1\nVersion: 2\nProvides: mta\n\n"+
		"Package: c\nVersion: 1\n\nPackage: c\nVersion: 2\n\nPackage: d\nVersion: 1\n\n"+
		"Package: e\nVersion: 1\nProvides: f\n\nPackage: e\nVersion: 3\n\nPackage: f\nVersion: 1\nProvides: e (= 5)")
	var first string
	for i := range 50 {
		pkgs := slices.Clone(idx.Packages)
		rand.Shuffle(len(pkgs), func(i, j int) { pkgs[i], pkgs[j] = pkgs[j], pkgs[i] })
		cut := rand.IntN(len(pkgs))
		got, err := Resolve([]*Index{{Packages: pkgs[:cut]}, {Packages: pkgs[cut:]}}, "amd64", []Want{{Name: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = names(got)
		} else if names(got) != first {
			t.Fatalf("got %s, then %s", first, names(got))
		}
	}
	if first != "c=2 e=3 p1=2 x=1" {
		t.Errorf("got %s", first)
	}
}

// TestResolveFirstIndexWins takes a name and version two indexes hold
// from the first.
func TestResolveFirstIndexWins(t *testing.T) {
	a, b := index(t, "Package: x\nVersion: 1"), index(t, "Package: x\nVersion: 1")
	b.Packages[0].Base = "http://mirror.test"
	for _, order := range [][]*Index{{a, b}, {b, a}} {
		got, err := Resolve(order, "amd64", []Want{{Name: "x"}})
		if err != nil || len(got) != 1 || got[0] != order[0].Packages[0] {
			t.Errorf("%v %v", got, err)
		}
	}
}

func TestResolveRefusesWants(t *testing.T) {
	idx := index(t, "Package: a\nVersion: 1")
	for _, tc := range []struct {
		arch  string
		wants []Want
		err   string
	}{
		{"all", []Want{{Name: "a"}}, `"all": not a host architecture`},
		{"amd64", []Want{{Name: "a b"}}, `want "a b": not a package name`},
		{"amd64", []Want{{Name: "a", Version: "1*2*"}}, "only a trailing * is a pattern"},
		{"amd64", []Want{{Name: "a", Version: "x:y"}}, "want a=x:y"},
		{"amd64", []Want{{Name: "c", Version: "1"}}, "want c=1: no index holds a package c"},
	} {
		if _, err := Resolve([]*Index{idx}, tc.arch, tc.wants); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.wants, err, tc.err)
		}
	}
}

func TestCheck(t *testing.T) {
	idx := index(t, "Package: a\nVersion: 1\nDepends: b (>= 2), c | d\n\nPackage: b\nVersion: 1\n\nPackage: d\nVersion: 1\n\n"+
		"Package: d\nVersion: 2\n\nPackage: e\nVersion: 1\nArchitecture: arm64")
	err := Check(idx.Packages, "amd64")
	for _, s := range []string{"a=1 (amd64): b (>= 2): nothing here satisfies it", "d=2 (amd64): d=1 (amd64) too", "e=1 (arm64): not of amd64"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v lacks %q", err, s)
		}
	}
	if err != nil && strings.Contains(err.Error(), "c | d") {
		t.Errorf("error %v: d satisfies c | d", err)
	}
}
