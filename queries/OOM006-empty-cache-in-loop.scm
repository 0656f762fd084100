; OOM006 empty-cache-in-loop: a call of `empty_cache()` or `<module>.empty_cache()`. The
; host resolves it to a torch allocator's `empty_cache` and decides whether it runs once
; per training or evaluation step: in such a loop, or in a helper called in one.
(call
  function: (attribute
    attribute: (identifier) @method) @callee
  (#eq? @method "empty_cache")) @call

(call
  function: (identifier) @callee
  (#eq? @callee "empty_cache")) @call
