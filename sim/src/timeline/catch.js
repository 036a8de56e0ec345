// Any error of the page's script is recorded in #js-errors (its data-errors counts them), so a
// broken page says so on the page, and a test can see it in the DOM.
(function () {
  'use strict';
  var errors = [];
  function show() {
    var el = document.getElementById('js-errors');
    if (!el) { return; }
    el.hidden = errors.length === 0;
    el.setAttribute('data-errors', String(errors.length));
    el.textContent = 'The page\'s script failed: ' + errors.join(' | ');
  }
  window.drydockReportError = function (message) {
    errors.push(String(message));
    show();
  };
  window.addEventListener('error', function (e) {
    window.drydockReportError((e.message || 'error') + ' (line ' + e.lineno + ':' + e.colno + ')');
  });
  window.addEventListener('unhandledrejection', function (e) {
    window.drydockReportError('unhandled rejection: ' + e.reason);
  });
  var consoleError = console.error;
  console.error = function () {
    window.drydockReportError('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  document.addEventListener('DOMContentLoaded', show);
})();
