; OOM002 eval-without-no-grad: a forward pass in evaluation code with autograd on.
; The query keeps calls whose callee ends like a network (`model(x)`, `self.net(x)`,
; `encoder.forward(x)`); the host decides whether it really is one, whether the code is
; evaluation (after `.eval()`, in an evaluation function, in a loop over an evaluation
; loader), and whether gradients are disabled by any route.
(call
  function: [(identifier) (attribute)] @callee
  (#match? @callee "(?i)(model|net|network|classifier|encoder|decoder|backbone|generator|discriminator|critic|actor|policy|teacher|student|unet|vae|transformer|resnet|detector|segmenter|forward)$")
  (#not-has-ancestor? @callee "decorator")) @forward

; A helper of the file that runs a network: `greedy_decode(model, src)`,
; `self._run_batch(batch)`. The host follows the call to the helper's `def`.
(call
  function: (identifier) @callee
  arguments: (argument_list (_))
  (#not-has-ancestor? @callee "decorator")) @forward

(call
  function: (attribute object: (identifier) @receiver (#eq? @receiver "self")) @callee
  (#not-has-ancestor? @callee "decorator")) @forward
