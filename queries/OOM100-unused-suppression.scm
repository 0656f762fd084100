; OOM100 has no pattern: it reads the suppression comments after every other rule has
; run (src/rules/oom100_unused_suppression.rs, src/suppress.rs).
