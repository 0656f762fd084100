; OOM003 deprecated-cuda-amp: a use of `torch.cuda.amp.*` / `torch.cpu.amp.*`. The host
; resolves the name through the file's imports and aliases.

; torch.cuda.amp.autocast(...), amp.GradScaler(), @torch.cuda.amp.custom_fwd: the name
; alone is matched and the host takes the attribute it ends. Matching the attribute node
; would keep one unfinished match open per link of a chain `a.b.c...` while its object is
; walked: quadratic in the chain's length.
((identifier) @name
  (#any-of? @name "autocast" "GradScaler" "custom_fwd" "custom_bwd"))

; autocast(...) after `from torch.cuda.amp import autocast` (or an alias)
(call function: (identifier) @reference)

; @custom_fwd
(decorator (identifier) @reference)

; amp_ctx = autocast
(assignment right: (identifier) @reference)
