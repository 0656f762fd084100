; OOM003 deprecated-cuda-amp: a use of `torch.cuda.amp.*` / `torch.cpu.amp.*`. The host
; resolves the name through the file's imports and aliases.

; torch.cuda.amp.autocast(...), amp.GradScaler(), @torch.cuda.amp.custom_fwd
((attribute
  attribute: (identifier) @name) @reference
  (#any-of? @name "autocast" "GradScaler" "custom_fwd" "custom_bwd"))

; autocast(...) after `from torch.cuda.amp import autocast` (or an alias)
(call function: (identifier) @reference)

; @custom_fwd
(decorator (identifier) @reference)

; amp_ctx = autocast
(assignment right: (identifier) @reference)
