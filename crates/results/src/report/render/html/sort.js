document.querySelectorAll('table.sortable th').forEach(function (th) {
  th.addEventListener('click', function () {
    var table = th.closest('table'), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var asc = th.getAttribute('aria-sort') !== 'ascending';
    table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    function key(row) {
      var t = row.cells[col] ? row.cells[col].textContent.trim() : '';
      var n = parseFloat(t.replace(/^\+/, ''));
      return isNaN(n) ? t : n;
    }
    Array.prototype.slice.call(body.rows).sort(function (a, b) {
      var x = key(a), y = key(b), c;
      if (typeof x === typeof y) { c = x < y ? -1 : x > y ? 1 : 0; }
      else { c = typeof x === 'number' ? -1 : 1; }
      return asc ? c : -c;
    }).forEach(function (row) { body.appendChild(row); });
  });
});
