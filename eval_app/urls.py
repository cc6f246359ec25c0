from __future__ import annotations

from lazy_imports import lazy_path, views_in

# Named, imported on first use: see lazy_imports.py.
case_views = views_in("eval_app.case_views")
views = views_in("eval_app.views")

app_name = "eval_app"
urlpatterns = [
    lazy_path("", views.eval_set_list, name="eval_set_list"),
    lazy_path("sets/<int:pk>/", views.eval_set_detail, name="eval_set_detail"),
    lazy_path("sets/<int:pk>/delete/", views.eval_set_delete, name="eval_set_delete"),
    lazy_path("sets/<int:pk>/export/<str:fmt>/", views.eval_set_export, name="eval_set_export"),
    lazy_path("sets/<int:pk>/runs/", views.eval_run_create, name="run_create"),
    lazy_path("cases/<int:pk>/edit/", case_views.case_edit, name="case_edit"),
    lazy_path("cases/<int:pk>/delete/", case_views.case_delete, name="case_delete"),
    lazy_path("runs/<int:pk>/", views.run_detail, name="run_detail"),
    lazy_path("runs/<int:pk>/stop/", views.run_stop, name="run_stop"),
    lazy_path("runs/<int:pk>/resume/", views.run_resume, name="run_resume"),
    lazy_path("results/<int:pk>/", views.result_detail, name="result_detail"),
    lazy_path("compare/", views.run_compare, name="run_compare"),
    lazy_path("sessions/<int:session_pk>/add/", case_views.add_session_form, name="add_session_form"),
]
