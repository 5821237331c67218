// sumi's web UI: range tabs, the settings forms (sent as JSON to the GrowthForecast
// API), deletes, the complex graph editor and the metric browser. No framework and
// no build step: this file is embedded in the binary as it is.
"use strict";

(function () {
  function $(sel, root) { return (root || document).querySelector(sel); }
  function $all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function enc(s) { return encodeURIComponent(s); }

  function withParam(src, name, value) {
    var url = new URL(src, location.href);
    url.searchParams.set(name, value);
    return url.pathname + url.search;
  }

  // --- graph panels: a range tab swaps the panel's images -------------------------
  document.addEventListener("click", function (ev) {
    var tab = ev.target.closest(".panel .tab");
    if (!tab) return;
    var panel = tab.closest(".panel");
    $all(".tab", panel).forEach(function (t) { t.classList.toggle("on", t === tab); });
    $all("img.graph-img", panel).forEach(function (img) {
      img.classList.remove("failed");
      img.src = withParam(img.getAttribute("src"), "t", tab.dataset.t);
    });
  });

  function watchImages(root) {
    $all("img.graph-img", root).forEach(function (img) {
      img.addEventListener("error", function () {
        if (!img.getAttribute("src")) return;
        img.classList.add("failed");
        img.title = "this graph could not be drawn";
      });
      img.addEventListener("load", function () { img.classList.remove("failed"); img.title = ""; });
    });
  }

  // --- forms ------------------------------------------------------------------------
  function showMessages(form, messages) {
    var box = $(".messages", form);
    if (!box) { alert(messages.join("\n")); return; }
    box.innerHTML = "";
    var ul = document.createElement("ul");
    messages.forEach(function (m) {
      var li = document.createElement("li");
      li.textContent = m;
      ul.appendChild(li);
    });
    box.appendChild(ul);
  }

  function messagesOf(body, status) {
    if (body && typeof body === "object") {
      var m = body.messages;
      if (Array.isArray(m)) return m;
      if (m && typeof m === "object") {
        return Object.keys(m).map(function (k) { return k + ": " + m[k]; });
      }
    }
    if (typeof body === "string" && body.trim()) return [body.trim()];
    return ["the server answered " + status];
  }

  function post(url, payload) {
    var opts = { method: "POST", headers: {} };
    if (payload !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(payload);
    }
    return fetch(url, opts).then(function (resp) {
      return resp.text().then(function (text) {
        var body = text;
        try { body = JSON.parse(text); } catch (e) { /* plain text */ }
        return { ok: resp.ok && body && body.error === 0, status: resp.status, body: body };
      });
    });
  }

  function complexRows(form) {
    return $all("tr.item", form).map(function (tr) {
      return {
        graph_id: Number($("[name=graph_id]", tr).value),
        type: $("[name=type]", tr).value,
        gmode: $("[name=gmode]", tr).value,
        stack: $("[name=stack]", tr).checked
      };
    });
  }

  function formData(form) {
    var out = {};
    $all("[name]", form).forEach(function (el) {
      if (el.closest("tr.item")) return;
      out[el.name] = el.type === "checkbox" ? el.checked : el.value;
    });
    if (form.hasAttribute("data-complex")) out.data = complexRows(form);
    return out;
  }

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.dataset.json) return;
    ev.preventDefault();
    var data = formData(form);
    post(form.dataset.json, data).then(function (r) {
      if (!r.ok) { showMessages(form, messagesOf(r.body, r.status)); return; }
      var names = [data.service_name, data.section_name, data.graph_name].map(enc).join("/");
      location.href = "/" + (form.dataset.next || "view_graph") + "/" + names;
    }).catch(function (e) { showMessages(form, [String(e)]); });
  });

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest("[data-delete]");
    if (!btn) return;
    if (!confirm(btn.dataset.confirm || "Delete?")) return;
    post(btn.dataset.delete).then(function (r) {
      if (!r.ok) { alert(messagesOf(r.body, r.status).join("\n")); return; }
      var to = "/";
      try { to = new URL(r.body.location).pathname; } catch (e) { /* home */ }
      location.href = to;
    });
  });

  document.addEventListener("input", function (ev) {
    var el = ev.target;
    if (el.dataset && el.dataset.mirror) {
      var other = $("[name=" + el.dataset.mirror + "]", el.closest("form"));
      if (other) other.value = el.value;
    } else if (el.name === "color" && el.form) {
      var picker = $("[data-mirror=color]", el.form);
      if (picker && /^#[0-9a-fA-F]{6}$/.test(el.value)) picker.value = el.value;
    }
  });

  // --- complex graphs: rows and preview -----------------------------------------------
  document.addEventListener("click", function (ev) {
    var add = ev.target.closest("[data-add-row]");
    if (add) {
      var body = $("table.items tbody", add.closest("form"));
      var rows = $all("tr.item", body);
      var copy = rows[rows.length - 1].cloneNode(true);
      body.appendChild(copy);
      return;
    }
    var remove = ev.target.closest("[data-remove-row]");
    if (remove) {
      var tr = remove.closest("tr.item");
      if ($all("tr.item", tr.parentNode).length > 1) tr.remove();
      return;
    }
    var preview = ev.target.closest("[data-preview]");
    if (preview) drawPreview(preview.closest("form"));
  });

  function drawPreview(form) {
    var spec = complexRows(form).map(function (r) {
      return [r.type, r.graph_id, r.gmode, r.stack ? 1 : 0].join(":");
    }).join(":");
    var img = $("#complex-preview");
    var sumup = $("[name=sumup]", form).checked ? "&sumup=1" : "";
    img.src = "/graph/" + spec + "?t=d&width=500&height=150" + sumup;
  }

  // --- the metric browser -----------------------------------------------------------------
  function loadChildren(ul, prefix) {
    var query = prefix ? prefix + ".*" : "*";
    return fetch("/metrics/find?query=" + enc(query)).then(function (r) { return r.json(); }).then(function (nodes) {
      ul.innerHTML = "";
      nodes.forEach(function (n) {
        var li = document.createElement("li");
        li.className = n.leaf ? "leaf" : "branch";
        li.dataset.path = n.id;
        var span = document.createElement("span");
        span.className = "node";
        // graphite-web's tree gives a node's text URL-unquoted, so a GrowthForecast
        // name (a %-escaped node) reads as it was posted; the id is the real path
        span.textContent = n.text;
        span.title = n.id;
        li.appendChild(span);
        ul.appendChild(li);
      });
      if (!nodes.length && !prefix) {
        ul.innerHTML = "<li class=\"empty\">no metrics yet</li>";
      }
    });
  }

  function targetsBox() { return $("#targets"); }

  function draw() {
    var img = $("#render-img");
    var msg = $("#render-msg");
    var targets = targetsBox().value.split("\n").map(function (t) { return t.trim(); }).filter(Boolean);
    var from = $("#from").value;
    var style = $("#style").value;
    var params = targets.map(function (t) { return "target=" + enc(t); });
    params.push("from=" + enc(from));
    if (style === "rrd") params.push("style=rrd");
    history.replaceState(null, "", "/browse?" + params.join("&"));
    msg.textContent = "";
    if (!targets.length) { img.removeAttribute("src"); return; }
    var width = Math.max(400, Math.min(1100, img.parentNode.clientWidth - 4));
    var src = "/render?" + params.join("&") + "&width=" + width + "&height=420&format=png";
    img.onerror = function () {
      fetch(src).then(function (r) { return r.text(); }).then(function (t) { msg.textContent = t; });
    };
    img.src = src;
  }

  function initBrowser() {
    var tree = $("#tree");
    if (!tree) return;
    loadChildren(tree, "");
    tree.addEventListener("click", function (ev) {
      var node = ev.target.closest(".node");
      if (!node) return;
      var li = node.parentNode;
      if (li.classList.contains("branch")) {
        var open = li.classList.toggle("open");
        var sub = $("ul", li);
        if (!sub) {
          sub = document.createElement("ul");
          li.appendChild(sub);
          loadChildren(sub, li.dataset.path);
        }
        sub.hidden = !open;
      } else {
        $all(".node.selected", tree).forEach(function (n) { n.classList.remove("selected"); });
        node.classList.add("selected");
        var box = targetsBox();
        var lines = box.value.split("\n").map(function (t) { return t.trim(); }).filter(Boolean);
        if (lines.indexOf(li.dataset.path) < 0) lines.push(li.dataset.path);
        box.value = lines.join("\n");
        draw();
      }
    });
    $("#tree-filter").addEventListener("input", function (ev) {
      var q = ev.target.value.toLowerCase();
      $all(":scope > li", tree).forEach(function (li) {
        var text = (li.textContent || "").toLowerCase();
        li.hidden = q !== "" && text.indexOf(q) < 0;
      });
    });
    $("#draw-form").addEventListener("submit", function (ev) { ev.preventDefault(); draw(); });
    $("#from").addEventListener("change", draw);
    $("#style").addEventListener("change", draw);
    $("#clear-targets").addEventListener("click", function () { targetsBox().value = ""; draw(); });
    if (targetsBox().value.trim()) draw();
  }

  document.addEventListener("DOMContentLoaded", function () {
    watchImages(document);
    initBrowser();
  });
})();
